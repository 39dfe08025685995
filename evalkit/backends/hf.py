"""Hugging Face transformers backend (CPU and CUDA).

Numerics follow lm-eval's ``HFLM`` so scores are comparable: trailing context whitespace moves into
the continuation, loglikelihood comes from one forward pass over context+continuation, perplexity
uses disjoint rolling windows of ``max_length`` tokens behind a prefix token, and generation is
greedy (or seeded sampling) with stop sequences cut from the decoded text.
"""
from __future__ import annotations

import json
import logging
import os
from collections import OrderedDict
from typing import Optional, Sequence

from evalkit.backends import model_dirs as models
from evalkit.backends.base import Backend
from evalkit.backends.cpu_malloc import keep_buffers_in_heap
from evalkit.backends.cpu_threads import ThreadChoice, choose_threads
from evalkit.backends.hf_scoring import PairScorer
from evalkit.backends.logprobs import CPU_CHUNK_ELEMS, GPU_CHUNK_ELEMS
from evalkit.backends.options import HFOptions, prefill_chunk_option
from evalkit.backends.tokenization import TokenizerMixin, chat_template_options, rolling_windows  # noqa: F401 (rolling_windows re-exported)
from evalkit.scoring.harmony import decode_completion, is_harmony_tokenizer
from evalkit.taskapi.requests import Completion, GenerateRequest, LoglikelihoodRequest, LoglikelihoodResult

log = logging.getLogger(__name__)

_HUGE_MAX_LEN = 1000000000000000019884624838656
# Greedy generation on CPU slows down sharply past ~8 rows a batch (every row keeps decoding until
# the batch's longest answer ends, and wide batches stop fitting the caches): 16 GSM8K 5-shot items,
# 2 threads, SmolLM2-135M took 102 s at 4 rows, 91 s at 8, 248 s at 16 and 260 s at 14.
CPU_GENERATION_ROWS = 8
# Tokens per scoring forward on CPU: 2,048-token windows ran at ~535 tokens/s 2 or 4 a batch and
# ~430 8 a batch (2 threads, bundled model), where activations outgrow what the allocator reuses.
CPU_TOKEN_BUDGET = 8192
# Long prompts and memory (bench/long_context.py): one pass over an N-token prompt holds the MLP's
# activations for all N positions (N x intermediate_size, a few times over), while a prompt read in
# chunks into the key/value cache (transformers' ``prefill_chunk_size``) holds them for a chunk but
# builds a chunk x N attention mask. ``prefill_chunk=auto`` chunks only where the first outweighs
# the second: a model whose MLP is wider than AUTO_CHUNK_WIDTH, a prompt longer than PREFILL_CHUNK.
# Measured on CPU at 64k tokens: a 512-wide MLP peaked at 2.0 GB in one pass and 4.1 GB in 8,192-token
# chunks; a 16,384-wide one (an 8B model's width) needs chunks.
PREFILL_CHUNK = 4096
AUTO_CHUNK_WIDTH = 2048


def _read_json(path: str) -> Optional[dict]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


class HFBackend(PairScorer, TokenizerMixin, Backend):
    name = "hf"

    def __init__(self, model: str, options: Optional[HFOptions] = None, **kwargs):
        """``options`` (or the same as keyword arguments): ``backends/options.py:HFOptions``."""
        import torch

        o = self.options = HFOptions.of(options, kwargs)
        self.chat_template, self.chat_template_kwargs, template_identity = chat_template_options(
            o.chat_template, o.chat_template_kwargs, o.reasoning_effort)

        self.torch = torch
        self.spec = model
        self.source = models.resolve(model)
        device = o.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        self.threads: Optional[ThreadChoice] = None
        if self.device.type == "cpu":
            keep_buffers_in_heap()
            self.threads = choose_threads(o.threads)  # the cores really free, unless given (cpu_threads.py)
            torch.set_num_threads(self.threads.threads)
        elif o.threads not in (None, "auto"):
            torch.set_num_threads(int(o.threads))
        dtype = o.dtype
        if dtype == "auto":
            dtype = "float32" if self.device.type == "cpu" else "auto"
        self.dtype_name = str(dtype)
        torch_dtype = dtype if dtype == "auto" else getattr(torch, dtype)
        local = os.path.isdir(self.source)
        snapshot = self.source if local else models.hub_snapshot(self.source, o.revision)
        load_from = snapshot or self.source
        # tokenizer, config and weights all load on first use: a run answered entirely from the
        # cache never imports transformers' model code nor reads the weights
        self._load_args = (load_from, None if snapshot else o.revision, torch_dtype, o.trust_remote_code)
        self._tokenizer = self._config = self._model = None
        self.add_bos_token = bool(o.add_bos_token)
        # run a prefix that many scored sequences share (few-shot examples) once, from its KV cache
        self.share_prefix = o.share_prefix
        self._max_length = int(o.max_length) if o.max_length else None
        self.max_gen_toks = int(o.max_gen_toks)
        self._prefill_chunk = prefill_chunk_option(o.prefill_chunk)
        self.batch_size = o.batch_size
        self.token_budget = int(o.token_budget or (CPU_TOKEN_BUDGET if self.device.type == "cpu" else 262144))
        self.chunk_size = int(o.chunk_size or (64 if self.device.type == "cpu" else 512))
        # logits held at once while reading log-probabilities (never batch x length x vocab)
        self.chunk_elems = CPU_CHUNK_ELEMS if self.device.type == "cpu" else GPU_CHUNK_ELEMS
        self._oom_budget: Optional[int] = None
        self._split = None  # SplitHead, made with the model
        self._identity = {
            "backend": "hf", "model": model, "source": self.source,
            "revision": o.revision, "dtype": self.dtype_name, "max_length": self.max_length,
            "add_bos_token": self.add_bos_token,
            "content": models.directory_identity(load_from, hash_weights=local) if snapshot else None,
            **template_identity,
        }

    @property
    def tokenizer(self):
        if self._tokenizer is None:
            from transformers import AutoTokenizer
            path, revision, _, trust = self._load_args
            tokenizer = AutoTokenizer.from_pretrained(path, revision=revision, trust_remote_code=trust)
            if tokenizer.pad_token_id is None:
                tokenizer.pad_token = tokenizer.eos_token
            self._tokenizer = tokenizer
        return self._tokenizer

    @property
    def prefill_chunk(self) -> int:
        """Tokens read per pass of a prompt longer than this (0: one pass); ``auto`` (see PREFILL_CHUNK)
        reads the model's config."""
        chosen = self._prefill_chunk
        if chosen == "auto":
            width = getattr(self.config.get_text_config(), "intermediate_size", None) or 0
            return PREFILL_CHUNK if width > AUTO_CHUNK_WIDTH else 0
        return chosen

    @property
    def config(self):
        if self._config is None:
            from transformers import AutoConfig
            path, revision, _, trust = self._load_args
            self._config = AutoConfig.from_pretrained(path, revision=revision, trust_remote_code=trust)
        return self._config

    @property
    def model(self):
        if self._model is None:
            from transformers import AutoModelForCausalLM
            path, revision, dtype, trust = self._load_args
            model = AutoModelForCausalLM.from_pretrained(path, revision=revision, dtype=dtype, trust_remote_code=trust)
            self._model = model.to(self.device).eval()
        return self._model

    # ---- identity and tokenization -------------------------------------------------------------
    def identity(self) -> dict:
        return self._identity

    @property
    def display_name(self) -> str:
        return os.path.basename(self.spec.rstrip("/")) if os.path.isdir(self.spec) else self.spec

    def runtime_info(self) -> dict:
        threads = getattr(self, "threads", None)  # (a model held in memory sets none)
        return {"cpu_threads": threads.to_dict()} if threads is not None else {}

    @property
    def max_length(self) -> int:
        if self._max_length:
            return self._max_length
        self._max_length = self._context_window()
        return self._max_length

    def _context_window(self) -> int:
        """The model's context length, as lm-eval's HFLM finds it: config first, then the tokenizer's
        model_max_length, then 2048. Read from the JSON files when they are local, so that a cached
        rerun needs neither transformers' config classes nor the tokenizer."""
        folder = self._load_args[0]
        cfg = _read_json(os.path.join(folder, "config.json"))
        keys = ("n_positions", "max_position_embeddings", "n_ctx")
        if cfg is not None and any(k in cfg for k in keys):
            return int(next(cfg[k] for k in keys if k in cfg))
        for attr in keys:
            if hasattr(self.config, attr):
                return int(getattr(self.config, attr))
        tok_cfg = _read_json(os.path.join(folder, "tokenizer_config.json"))
        tml = tok_cfg.get("model_max_length") if tok_cfg is not None else \
            getattr(self.tokenizer, "model_max_length", None)
        if tml and int(tml) != _HUGE_MAX_LEN:
            return int(tml)
        return 2048

    # ---- loglikelihood ---------------------------------------------------------------------------
    def loglikelihood(self, requests: Sequence[LoglikelihoodRequest]) -> list[LoglikelihoodResult]:
        return self._score_token_pairs(self.encode_pairs([(r.context, r.continuation) for r in requests]))

    def score_windows(self, windows):
        return self._score_token_pairs(windows)

    # ---- generation -------------------------------------------------------------------------------
    @property
    def harmony(self) -> bool:
        """Whether the model speaks gpt-oss's harmony format (its completions keep their special tokens)."""
        if getattr(self, "_harmony", None) is None:
            self._harmony = is_harmony_tokenizer(self.tokenizer)
        return self._harmony

    def _prompt_text(self, req: GenerateRequest) -> str:
        return req.prompt if req.prompt is not None else self.apply_chat_template(req.message_dicts())

    def _stop_list(self, params) -> list[str]:
        stops = [s for s in params.stop if s]
        eos = self.tokenizer.decode([self.tokenizer.eos_token_id], skip_special_tokens=False)
        if eos and eos not in stops:
            stops.append(eos)
        return stops

    def generate(self, requests: Sequence[GenerateRequest]) -> list[list[Completion]]:
        out: list[Optional[list[Completion]]] = [None] * len(requests)
        for group in self.stream("generate", requests):
            for i, comps in group:
                out[i] = comps
        return out

    def stream(self, kind: str, requests: Sequence):
        """Answers batch by batch, as (index, result) lists, so the engine commits each batch."""
        if kind == "tool_chat":
            yield list(enumerate(self.tool_chat(requests)))
            return
        if kind == "loglikelihood":
            pairs = self.encode_pairs([(r.context, r.continuation) for r in requests])
            for idxs in self._score_pieces(requests):
                yield list(zip(idxs, self._score_token_pairs([pairs[i] for i in idxs])))
            return
        if kind != "generate":
            for idxs in self._score_pieces(requests):
                yield list(zip(idxs, self.loglikelihood_rolling([requests[i] for i in idxs])))
            return
        greedy_groups: "OrderedDict[tuple, list[int]]" = OrderedDict()
        for i, r in enumerate(requests):
            if r.params.greedy:
                greedy_groups.setdefault((r.params.max_tokens, tuple(r.params.stop), r.params.repetition_penalty),
                                         []).append(i)
            else:
                yield [(i, self._sample_one(r))]
        for idxs in greedy_groups.values():
            prompts = [self._prompt_text(requests[i]) for i in idxs]
            params = requests[idxs[0]].params
            for batch in self._generate_batches(prompts, params, do_sample=False):
                yield [(idxs[j], [c] * params.n) for j, c in batch]

    def _score_pieces(self, requests: Sequence) -> list[list[int]]:
        """Scoring requests cut into about a batch each (the choices of one question never split), so
        a kill loses at most a batch; a shared few-shot prefix is still run once (its key/value cache
        is kept from one piece to the next)."""
        size = int(self.batch_size) if self.batch_size not in ("auto", None) else max(16, self.chunk_size // 4)
        pieces, piece = [], []
        for i, r in enumerate(requests):
            ctx = getattr(r, "context", None)
            if len(piece) >= size and not (ctx is not None and ctx == getattr(requests[piece[-1]], "context", None)):
                pieces.append(piece)
                piece = []
            piece.append(i)
        return pieces + [piece] if piece else pieces

    def _sample_one(self, req: GenerateRequest) -> list[Completion]:
        """Seeded sampling, one request at a time so the draw never depends on batch makeup."""
        torch = self.torch
        prompt = self._prompt_text(req)
        comps = []
        for k in range(req.params.n):
            devices = [self.device] if self.device.type == "cuda" else []
            with torch.random.fork_rng(devices=devices):
                seed = (req.params.seed if req.params.seed is not None else 0) * 1000003 + k
                torch.manual_seed(seed % (2 ** 63))
                comps.extend(self._generate_batch([prompt], req.params, do_sample=True))
        return comps

    def _generate_batch(self, prompts: list[str], params, do_sample: bool) -> list[Completion]:
        results: list[Optional[Completion]] = [None] * len(prompts)
        for batch in self._generate_batches(prompts, params, do_sample):
            for j, c in batch:
                results[j] = c
        return results

    def _generate_batches(self, prompts: list[str], params, do_sample: bool):
        """Generate in batches (longest prompts first); yields each batch's (index, Completion) pairs."""
        torch = self.torch
        from transformers import StoppingCriteria, StoppingCriteriaList

        stops = self._stop_list(params)
        max_new = int(params.max_tokens)
        max_ctx = max(1, self.max_length - max_new)
        enc = [self.encode(p)[-max_ctx:] for p in prompts]
        order = sorted(range(len(enc)), key=lambda j: -len(enc[j]))
        tokenizer = self.tokenizer

        class StopOnStrings(StoppingCriteria):
            def __init__(self, start: int):
                self.start = start

            def __call__(self, input_ids, scores, **kwargs):
                done = []
                for row in input_ids:
                    text = tokenizer.decode(row[self.start:], skip_special_tokens=False)
                    done.append(any(s in text for s in stops))
                return torch.tensor(done, device=input_ids.device)

        if self.batch_size in ("auto", None):
            budget_rows = max(1, self.token_budget // max(1, (len(enc[order[0]]) + max_new)))
            if self.device.type == "cpu":
                budget_rows = min(budget_rows, CPU_GENERATION_ROWS)
        else:
            budget_rows = int(self.batch_size)
        for b in range(0, len(order), budget_rows):
            rows = order[b: b + budget_rows]
            done = []
            width = max(len(enc[j]) for j in rows)
            pad = tokenizer.pad_token_id
            ids = torch.full((len(rows), width), pad, dtype=torch.long)
            mask = torch.zeros((len(rows), width), dtype=torch.long)
            for r, j in enumerate(rows):  # left padding
                ids[r, width - len(enc[j]):] = torch.tensor(enc[j])
                mask[r, width - len(enc[j]):] = 1
            kwargs = dict(do_sample=do_sample, max_new_tokens=max_new, pad_token_id=pad, use_cache=True,
                          stopping_criteria=StoppingCriteriaList([StopOnStrings(width)]))
            if do_sample:
                kwargs.update(temperature=float(params.temperature), top_p=float(params.top_p),
                              top_k=int(params.top_k))
                if params.min_p:
                    kwargs["min_p"] = float(params.min_p)
            else:
                kwargs.update(temperature=None, top_p=None, top_k=None)
            if params.repetition_penalty != 1.0:
                kwargs["repetition_penalty"] = float(params.repetition_penalty)
            if 0 < self.prefill_chunk < width:
                kwargs["prefill_chunk_size"] = self.prefill_chunk
            with torch.inference_mode():
                gen = self.model.generate(input_ids=ids.to(self.device), attention_mask=mask.to(self.device), **kwargs)
            for r, j in enumerate(rows):
                new = gen[r, width:].tolist()
                if tokenizer.eos_token_id in new:
                    new = new[: new.index(tokenizer.eos_token_id) + 1]
                text = decode_completion(tokenizer, new, self.harmony)  # harmony: with its channel tokens
                raw = tokenizer.decode(new, skip_special_tokens=False)
                hit = any(s in raw for s in stops)
                for s in stops:
                    text = text.split(s)[0]
                finish = "stop" if hit or (new and new[-1] == tokenizer.eos_token_id) or len(new) < max_new else "length"
                done.append((j, Completion(text, finish)))
            yield done
