"""The backend protocol: one class per way of running a model.

A backend answers lists of requests of one kind. The engine has already deduped them, removed
cached ones, sorted them by length and cut them into chunks; a backend batches inside a chunk as it
sees fit. ``identity()`` describes the model exactly (weights, tokenizer, chat template, dtype):
its digest keys the cache, so it must never hold secrets.

Besides the three request kinds, the protocol declares what callers may use, each with a default:
``max_length`` (context window in tokens, None when unknown), ``encode`` (text -> token ids),
``apply_chat_template``, ``run_stats`` (counters for the run record), ``adapters`` (LoRA adapter
names served by the same engine) and ``close``. Perplexity has one implementation here: a backend
gives ``score_windows`` (and, if it differs, ``rolling_window_params``) and inherits
``loglikelihood_rolling``.
"""
from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections import Counter
from typing import Optional, Sequence

from evalkit.backends.tokenization import rolling_windows
from evalkit.taskapi.requests import Completion, GenerateRequest, LoglikelihoodRequest, LoglikelihoodResult, RollingRequest


class Backend(ABC):
    name: str = "base"
    #: how many requests the engine hands over per call (and commits to the cache after)
    chunk_size: int = 64
    #: LoRA adapters served by the same engine (``for_adapter(name)`` gives each its own view)
    adapters: tuple = ()
    #: counters of this backend's work (completions, hits of max_tokens, prompt tokens, ...)
    stats: Counter
    #: a streaming backend's answers are committed to the cache at least this often (seconds)
    commit_every_s: float = 2.0

    @abstractmethod
    def identity(self) -> dict: ...

    def identity_hash(self) -> str:
        blob = json.dumps(self.identity(), sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:32]

    @property
    def display_name(self) -> str:
        return str(self.identity().get("model", self.name))

    def runtime_info(self) -> dict:
        """How this backend runs here, for the run record (never part of the identity: it changes no
        answer), e.g. the HF backend's CPU thread choice."""
        return {}

    @abstractmethod
    def loglikelihood(self, requests: Sequence[LoglikelihoodRequest]) -> list[LoglikelihoodResult]: ...

    def loglikelihood_rolling(self, requests: Sequence[RollingRequest]) -> list[float]:
        """Total logprob of each text over disjoint windows of at most ``max_length`` tokens behind
        the prefix token (lm-eval's rolling windows), all windows of all texts scored together."""
        prefix_token, max_len = self.rolling_window_params()
        windows, owner = [], []
        for i, r in enumerate(requests):
            for w in rolling_windows(self.encode(r.text), prefix_token, max_len):
                windows.append(w)
                owner.append(i)
        totals = [0.0] * len(requests)
        for res, i in zip(self.score_windows(windows), owner):
            totals[i] += res.logprob
        return totals

    def rolling_window_params(self) -> tuple[int, int]:
        """(prefix token id, window length) of the perplexity windows."""
        return self.prefix_token_id, self.max_length

    def score_windows(self, windows: list[tuple[list[int], list[int]]]) -> list[LoglikelihoodResult]:
        """Logprob of each (context tokens, target tokens) pair; needed for perplexity."""
        raise NotImplementedError(f"backend {self.name} cannot score token windows (perplexity)")

    @abstractmethod
    def generate(self, requests: Sequence[GenerateRequest]) -> list[list[Completion]]: ...

    def stream(self, kind: str, requests: Sequence):
        """Answers of one engine chunk as ``(index, answer)`` lists, yielded as they finish so the
        engine commits them to the cache at once. Default: the kind's method on the whole chunk,
        one list; the vLLM backend streams generation from the engine's step loop."""
        call = {"loglikelihood": self.loglikelihood, "loglikelihood_rolling": self.loglikelihood_rolling,
                "generate": self.generate}.get(kind) or getattr(self, kind)  # e.g. a reward backend's reward
        results = call(requests)
        if len(results) != len(requests):
            raise RuntimeError(f"backend {self.name} returned {len(results)} responses for {len(requests)} "
                               f"{kind} requests")
        yield list(enumerate(results))

    def tool_chat(self, requests: Sequence) -> list[list[Completion]]:
        """Agent turns (``ToolChatRequest``): rendered with tools by the model's chat template,
        generated, calls parsed (``evalkit.backends.tool_chat``); a server backend sends them as they are."""
        from evalkit.backends.tool_chat import answer_locally
        tok = self.text_tokenizer() if hasattr(self, "text_tokenizer") else getattr(self, "tokenizer", None)
        if tok is None:
            raise NotImplementedError(f"backend {self.name} cannot render tool turns: it has no tokenizer")
        return answer_locally(self, tok, requests)

    def embed(self, requests: Sequence) -> list[list[float]]:
        """Embedding vectors of texts (``EmbedRequest``); embedding backends only."""
        raise NotImplementedError(f"backend {self.name} does not embed texts")

    def apply_chat_template(self, messages: list[dict]) -> str:
        """Render chat messages into the model's prompt string (generation prompt appended)."""
        raise NotImplementedError(f"backend {self.name} cannot render chat templates")

    @property
    def max_length(self) -> Optional[int]:
        return None

    def encode(self, text: str) -> list[int]:
        raise NotImplementedError(f"backend {self.name} has no tokenizer")

    def run_stats(self) -> dict:
        """This backend's counters with the derived rates the run record reports."""
        s = dict(getattr(self, "stats", None) or {})
        if s.get("completions"):
            s["fraction_hit_max_tokens"] = s.get("completions_hit_max_tokens", 0) / s["completions"]
        if s.get("prompt_toks"):
            s["prefix_cache_hit_rate"] = s.get("cached_prompt_toks", 0) / s["prompt_toks"]
        return s

    def close(self) -> None:
        pass
