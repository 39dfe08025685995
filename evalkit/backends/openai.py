"""OpenAI-compatible server backend (``--model openai:<served name> --base-url http://host:port/v1``).

Talks to ``/v1/completions`` and ``/v1/chat/completions`` of any OpenAI-compatible server (vLLM's
``vllm serve``, TGI, SGLang, OpenAI itself) with the standard library only:

* loglikelihood and perplexity through ``echo`` + ``logprobs`` on /v1/completions (prompt token
  logprobs, as lm-eval's ``local-completions``). With a tokenizer (found automatically when the
  server's ``/v1/models`` names a local model dir, or given as ``tokenizer=``) prompts are sent as
  token ids built with the hf backend's rules, so scores match the local backends; without one the
  text is sent and the continuation is located by ``text_offset``. A server that returns no prompt
  logprobs gets a clear error (generation still works);
* generation through /v1/completions (prompt strings or token ids) and /v1/chat/completions
  (messages), with n, temperature, top_p, max_tokens, stop and seed;
* bounded concurrency (a thread pool of ``concurrency`` workers, one keep-alive connection each),
  retries with exponential backoff and full jitter on connection errors, timeouts, 408, 429 and
  5xx (``Retry-After`` honoured); other 4xx fail at once with the server's message.

The API key comes from the environment (``OPENAI_API_KEY``, or the variable named by
``api_key_env``) and goes only into the Authorization header: never into ``identity()`` (which keys
the response cache), the run record or a log line. The identity holds the served model name, the
base URL and the stable part of what ``/v1/models`` reports (root, max_model_len, owner), so a
restarted server keeps its cache.
"""
from __future__ import annotations

import json
import logging
import os
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Optional, Sequence

from evalkit.backends import model_dirs as models
from evalkit.backends.base import Backend
from evalkit.backends.options import OpenAIOptions
from evalkit.backends.openai_http import BackendError, MalformedReply, _Http  # noqa: F401 (re-exported)
from evalkit.backends.tokenization import encode_pair, prefix_token_id, truncate_pair
from evalkit.util.errors import RequestFailure
from evalkit.taskapi.requests import Completion, GenerateRequest, LoglikelihoodRequest, LoglikelihoodResult

log = logging.getLogger(__name__)

_SERVER_FIELDS = ("id", "root", "parent", "owned_by", "max_model_len")  # stable across restarts


def _shape(obj) -> str:
    """A short description of what a reply held, for error messages (never its full content)."""
    if isinstance(obj, dict):
        return "keys: " + (", ".join(sorted(map(str, obj))[:8]) or "none")
    return type(obj).__name__


def _choices(resp, where: str) -> list[dict]:
    """The ``choices`` of a completions reply, checked: a JSON object with a non-empty list of objects."""
    if not isinstance(resp, dict):
        raise MalformedReply(f"{where} returned a JSON {type(resp).__name__}, not an object with 'choices'")
    choices = resp.get("choices")
    if not isinstance(choices, list) or not choices or not all(isinstance(c, dict) for c in choices):
        raise MalformedReply(f"{where} returned no usable 'choices' ({_shape(resp)}; choices: "
                             f"{json.dumps(choices)[:60] if choices is not None else 'missing'})")
    return sorted(choices, key=lambda c: c.get("index", 0) if isinstance(c.get("index"), int) else 0)


class OpenAIBackend(Backend):
    name = "openai"
    commit_every_s = 0.0  # the engine commits every reply as it arrives

    def __init__(self, model: str, options: Optional[OpenAIOptions] = None, **kwargs):
        """``options`` (or the same as keyword arguments): ``backends/options.py:OpenAIOptions``."""
        o = self.options = OpenAIOptions.of(options, kwargs)
        from evalkit.backends.openai_reasoning import ReasoningOptions
        self.reasoning = ReasoningOptions.make(model, o.reasoning_model, o.reasoning_effort, o.chat_template_kwargs)
        base_url = (o.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
        for tail in ("/chat/completions", "/completions"):  # an endpoint (lm-eval's base_url): the API root
            if base_url.endswith(tail):
                log.warning("openai backend: base_url ends in %s (an endpoint); using the API root above it", tail)
                base_url = base_url[:-len(tail)]
                break
        self.model, self.base_url = model, base_url
        api_key_env = o.api_key_env
        api_key = os.environ.get(api_key_env) if api_key_env else None
        if api_key_env and api_key_env != "OPENAI_API_KEY" and not api_key:
            raise ValueError(f"openai backend: api_key_env={api_key_env} but that environment variable is not set")
        self.stats: Counter = Counter()
        self.http = _Http(self.base_url, api_key, o.timeout, o.max_retries, o.backoff_base, o.backoff_max, self.stats)
        self.base_url = self.http.shown  # credentials in the URL go on requests only, never into records
        self.concurrency, self.batch_size = max(1, int(o.concurrency)), max(1, int(o.batch_size))
        self.chunk_size = int(o.chunk_size or 32 * self.concurrency)
        self.add_bos_token = bool(o.add_bos_token)
        self.server_model = self._server_model()
        self.tokenizer, tok_source = self._load_tokenizer(o.tokenizer, o.trust_remote_code)
        served_len = self.server_model.get("max_model_len")
        self._max_length = int(o.max_length) if o.max_length else (int(served_len) - 2 if served_len else None)
        self._identity = {
            "backend": "openai", "model": model, "base_url": self.base_url, "server_model": self.server_model,
            # (named "encoding": run records redact keys that contain "token")
            "encoding": {"mode": "tokens" if self.tokenizer is not None else "text", "source": tok_source,
                         "files": (models.directory_identity(tok_source, hash_weights=False)
                                   if tok_source and os.path.isdir(tok_source) else None)},
            "max_length": self._max_length, "add_bos_token": self.add_bos_token,
            **self.reasoning.identity(),
        }

    # ---- setup ---------------------------------------------------------------------------------
    def _server_model(self) -> dict:
        listing = self.http.call("GET", "/models")
        entries = listing.get("data", []) if isinstance(listing, dict) else []
        entries = [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
        for e in entries:
            if e.get("id") == self.model:
                return {k: e[k] for k in _SERVER_FIELDS if e.get(k) is not None}
        names = ", ".join(str(e.get("id")) for e in entries[:20]) or "none"
        raise ValueError(f"openai backend: {self.base_url} does not serve {self.model!r} (it serves: {names})")

    def _load_tokenizer(self, choice, trust_remote_code):
        if choice in (None, "", "none", False):
            return None, None
        if choice == "auto":  # the dir the server loaded, else a local dir or bundled model of that name
            candidates = [self.server_model.get("root"), self.model]
            if self.model in models.BUNDLED:
                candidates.append(str(models.bundled_path(self.model)))
            source = next((c for c in candidates if c and os.path.isfile(os.path.join(c, "tokenizer_config.json"))),
                          None)
            if source is None:
                log.info("openai backend: no local tokenizer for %s; text mode", self.model)
                return None, None
        else:
            source = models.resolve(str(choice), auto_prepare=False) if choice in models.BUNDLED else str(choice)
        from transformers import AutoTokenizer
        return AutoTokenizer.from_pretrained(source, trust_remote_code=trust_remote_code), source

    # ---- identity and tokenization --------------------------------------------------------------
    def identity(self) -> dict:
        return self._identity

    @property
    def display_name(self) -> str:
        return self.model

    @property
    def max_length(self) -> Optional[int]:
        return self._max_length

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=self.add_bos_token)

    def apply_chat_template(self, messages: list[dict]) -> str:
        if self.tokenizer is None:
            raise NotImplementedError("openai backend in text mode cannot render chat templates locally; "
                                      "give tokenizer=<dir or hub id>")
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                                  **self.reasoning.chat_template_kwargs)

    # ---- transport ------------------------------------------------------------------------------
    def _map(self, fn, items: list) -> list:
        """fn over items on the worker pool, in order; the first failure cancels what has not started."""
        if threading.current_thread() is threading.main_thread():  # a new top-level call (not a stream's worker)
            self.http.resume()
        if len(items) <= 1 or self.concurrency == 1:
            return [fn(x) for x in items]
        pool = ThreadPoolExecutor(max_workers=self.concurrency)
        futures = [pool.submit(fn, x) for x in items]
        try:
            return [f.result() for f in futures]
        except BaseException:
            for f in futures:
                f.cancel()
            self.http.abort()  # Ctrl-C or a failure: requests still waiting on the server end now
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _echo_logprobs(self, prompts: list) -> list[dict]:
        """Prompt logprobs of each prompt (token ids or text) via echo, ``batch_size`` prompts a call."""
        def one_call(batch):
            body = {"model": self.model, "prompt": batch, "max_tokens": 1, "temperature": 0.0,
                    "logprobs": 1, "echo": True}
            try:
                resp = self.http.call("POST", "/completions", body)
            except BackendError as e:
                if any(w in str(e).lower() for w in ("echo", "logprob")):
                    raise BackendError(f"{self.base_url} cannot return prompt logprobs ({e}); loglikelihood and "
                                       f"perplexity tasks need /v1/completions with echo+logprobs (e.g. vLLM); "
                                       f"generation tasks work") from None
                raise
            choices = _choices(resp, f"POST {self.base_url}/completions")
            if len(choices) != len(batch):
                raise MalformedReply(f"POST {self.base_url}/completions returned {len(choices)} choices for "
                                     f"{len(batch)} prompts")
            if any(not isinstance(c.get("logprobs"), dict) or not isinstance(c["logprobs"].get("token_logprobs"), list)
                   or not c["logprobs"]["token_logprobs"] for c in choices):
                raise BackendError(f"{self.base_url} returned no prompt logprobs for echo=True: loglikelihood and "
                                   f"perplexity tasks need a server that does (e.g. vLLM); generation tasks work")
            return [c["logprobs"] for c in choices]

        batches = [prompts[i:i + self.batch_size] for i in range(0, len(prompts), self.batch_size)]
        return [lp for out in self._map(one_call, batches) for lp in out]

    # ---- loglikelihood ----------------------------------------------------------------------------
    def _need_max_length(self) -> int:
        if not self._max_length:
            raise ValueError("openai backend: the server reports no max_model_len; give max_length=N")
        return self._max_length

    def _score_token_pairs(self, pairs) -> list[LoglikelihoodResult]:
        seqs = [truncate_pair(ctx, cont, self._need_max_length()) for ctx, cont in pairs]
        out = []
        for (whole, n), lp in zip(seqs, self._echo_logprobs([w for w, _ in seqs])):
            try:
                out.append(self._read_logprobs(whole, n, lp))
            except (TypeError, ValueError, IndexError, KeyError, AttributeError) as e:
                raise MalformedReply(f"POST {self.base_url}/completions: unreadable prompt logprobs "
                                     f"({type(e).__name__}: {e})") from None
        return out

    def _read_logprobs(self, whole, n, lp) -> LoglikelihoodResult:
        tl, top, toks = lp["token_logprobs"], lp.get("top_logprobs") or [], lp.get("tokens") or []
        if len(tl) < len(whole):
            raise ValueError(f"{len(tl)} token logprobs for a {len(whole)}-token prompt")
        total, greedy = 0.0, True
        for j in range(len(whole) - n, len(whole)):
            if tl[j] is None:
                raise ValueError(f"no logprob for prompt token {j}")
            total += float(tl[j])
            if j < len(top) and top[j] and j < len(toks):
                greedy = greedy and max(top[j], key=top[j].get) == toks[j]
        return LoglikelihoodResult(total, greedy)

    def loglikelihood(self, requests: Sequence[LoglikelihoodRequest]) -> list[LoglikelihoodResult]:
        if self.tokenizer is not None:
            pid = prefix_token_id(self.tokenizer)
            return self._score_token_pairs([encode_pair(self.encode, pid, r.context, r.continuation) for r in requests])
        return self._loglikelihood_text(requests)

    def _loglikelihood_text(self, requests) -> list[LoglikelihoodResult]:
        """No tokenizer: send the text and score the tokens that start at or after the context end."""
        texts, bounds = [], []
        for r in requests:
            ctx, cont = r.context, r.continuation
            n_spaces = len(ctx) - len(ctx.rstrip())
            if n_spaces:
                ctx, cont = ctx[:-n_spaces], ctx[-n_spaces:] + cont
            if not ctx:
                raise ValueError("openai backend in text mode cannot score an empty context; give tokenizer=")
            texts.append(ctx + cont)
            bounds.append(len(ctx))
        out = []
        for text, start, lp in zip(texts, bounds, self._echo_logprobs(texts)):
            try:
                offs, tl, toks = lp["text_offset"], lp["token_logprobs"], lp["tokens"]
                top = lp.get("top_logprobs") or []
                idx = [j for j, o in enumerate(offs) if start <= o < len(text)]
                ok = idx and not any(tl[j] is None for j in idx)
                if ok:
                    greedy = all(j < len(top) and top[j] and max(top[j], key=top[j].get) == toks[j] for j in idx)
                    out.append(LoglikelihoodResult(float(sum(tl[j] for j in idx)), greedy))
            except (TypeError, ValueError, IndexError, KeyError, AttributeError) as e:
                raise MalformedReply(f"POST {self.base_url}/completions: unreadable prompt logprobs "
                                     f"({type(e).__name__}: {e})") from None
            if not ok:
                raise MalformedReply(f"POST {self.base_url}/completions: cannot locate the continuation in the "
                                     f"echoed tokens")
        return out

    def rolling_window_params(self):
        if self.tokenizer is None:
            raise ValueError("openai backend: perplexity needs token windows; give tokenizer=<dir or hub id> "
                             "(found automatically when the server runs a local model dir)")
        return prefix_token_id(self.tokenizer), self._need_max_length()

    def score_windows(self, windows):
        return self._score_token_pairs(windows)
    # ---- generation -------------------------------------------------------------------------------
    def _gen_body(self, req: GenerateRequest) -> tuple[str, dict]:
        p = req.params
        body = {"model": self.model, "max_tokens": int(p.max_tokens), "temperature": float(p.temperature),
                "n": 1 if p.greedy else int(p.n)}
        if p.stop:
            body["stop"] = [s for s in p.stop if s]
        if not p.greedy:
            body["top_p"] = float(p.top_p)
            if p.seed is not None:
                body["seed"] = int(p.seed)
            if p.top_k:  # vLLM/SGLang server extensions of the completions API
                body["top_k"] = int(p.top_k)
            if p.min_p:
                body["min_p"] = float(p.min_p)
        if p.repetition_penalty != 1.0:
            body["repetition_penalty"] = float(p.repetition_penalty)
        if req.messages is not None:
            body["messages"] = req.message_dicts()
            return "/chat/completions", self.reasoning.shape_body(body, chat=True)
        if self.tokenizer is not None and self._max_length:
            max_ctx = max(1, self._max_length - int(p.max_tokens))
            body["prompt"] = self.encode(req.prompt)[-max_ctx:]
        else:
            body["prompt"] = req.prompt
        return "/completions", self.reasoning.shape_body(body, chat=False)

    def _generate_one(self, req: GenerateRequest) -> list[Completion]:
        path, body = self._gen_body(req)
        resp = self.http.call("POST", path, body)
        where = f"POST {self.base_url}{path}"
        choices = _choices(resp, where)
        want = 1 if req.params.greedy else int(req.params.n)
        if len(choices) < want:
            raise MalformedReply(f"{where} returned {len(choices)} choices for n={want}")
        from evalkit.backends.openai_reasoning import reply_trace, reply_usage
        usage = reply_usage(resp)
        comps = []
        for i, c in enumerate(choices[:want]):
            trace, trace_open = reply_trace(c), None
            if "message" in c:
                msg = c["message"]
                text = msg.get("content") if isinstance(msg, dict) else None
                if text is None and trace is not None:  # vLLM's reasoning parser: no end of trace, no content
                    text, trace_open = "", True
                if text is None and isinstance(msg, dict) and msg.get("refusal") is None and "content" in msg:
                    text = ""  # a chat reply may carry content null (e.g. only a tool call)
            else:
                text = c.get("text")
            if not isinstance(text, str):
                raise MalformedReply(f"{where}: choices[{i}] carries no text ({_shape(c)})")
            comps.append(Completion(text, "length" if c.get("finish_reason") == "length" else "stop", trace,
                                    usage if i == 0 else None, trace_open))
        return comps[:1] * int(req.params.n) if req.params.greedy else comps

    def stream(self, kind: str, requests: Sequence):
        """Answers as they arrive, for the engine to commit one by one: lists of (index, result).
        A malformed reply fails its own request (a RequestFailure, never cached); any other error
        (refused, 401, retries exhausted) ends the stream after what finished was handed over."""
        call = {"loglikelihood": self.loglikelihood, "loglikelihood_rolling": self.loglikelihood_rolling,
                "generate": self.generate, "tool_chat": self.tool_chat}[kind]
        step = self.batch_size if kind == "loglikelihood" else 1  # one HTTP call per unit of work
        units = [list(range(i, min(i + step, len(requests)))) for i in range(0, len(requests), step)]

        def work(idx):
            try:
                return idx, call([requests[k] for k in idx])
            except MalformedReply as e:
                return idx, [RequestFailure(str(e))] * len(idx)

        if self.concurrency == 1 or len(units) <= 1:
            for idx in units:
                got, res = work(idx)
                yield list(zip(got, res))
            return
        from concurrent.futures import as_completed
        self.http.resume()
        pool = ThreadPoolExecutor(max_workers=self.concurrency)
        futures = [pool.submit(work, idx) for idx in units]
        try:
            for f in as_completed(futures):
                got, res = f.result()
                yield list(zip(got, res))
        except BaseException:  # Ctrl-C (here or in the engine), a failure: in-flight requests end now
            self.http.abort()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def tool_chat(self, requests: Sequence) -> list[list[Completion]]:
        from evalkit.backends.openai_tools import tool_chat_one
        return self._map(lambda r: tool_chat_one(self, r), list(requests))

    def generate(self, requests: Sequence[GenerateRequest]) -> list[list[Completion]]:
        out = self._map(self._generate_one, list(requests))
        for comps in out:
            self.stats["completions"] += len(comps)
            self.stats["completions_hit_max_tokens"] += sum(c.finish_reason == "length" for c in comps)
        return out
