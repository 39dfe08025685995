"""The three request kinds every backend answers (as lm-eval has them) and their responses.

Requests are frozen, hashable dataclasses: the engine dedupes identical requests across tasks and
keys the response cache on ``request.key()``, a stable digest of the request's content.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Optional, Union

Messages = tuple  # tuple of (role, content) pairs; hashable form of chat messages


def _digest(obj) -> str:
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _memo_key(req, compute) -> str:
    """Requests are frozen; their key is computed once and kept on the instance."""
    k = req.__dict__.get("_key")
    if k is None:
        k = compute()
        object.__setattr__(req, "_key", k)
    return k


@dataclass(frozen=True)
class LoglikelihoodRequest:
    """log P(continuation | context): answered with (sum of logprobs, whether greedy)."""

    context: str
    continuation: str
    kind = "loglikelihood"

    def key(self) -> str:
        return _memo_key(self, lambda: _digest(["ll", self.context, self.continuation]))

    def length(self) -> int:
        return len(self.context) + len(self.continuation)


@dataclass(frozen=True)
class RollingRequest:
    """log P(text) over the whole text with windowing (perplexity)."""

    text: str
    kind = "loglikelihood_rolling"

    def key(self) -> str:
        return _memo_key(self, lambda: _digest(["rolling", self.text]))

    def length(self) -> int:
        return len(self.text)


@dataclass(frozen=True)
class GenParams:
    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    n: int = 1
    stop: tuple = ()
    seed: Optional[int] = None

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def to_dict(self) -> dict:
        return {"max_tokens": self.max_tokens, "temperature": self.temperature, "top_p": self.top_p,
                "n": self.n, "stop": list(self.stop), "seed": self.seed}


@dataclass(frozen=True)
class GenerateRequest:
    """Generate ``params.n`` completions for a prompt string or chat messages."""

    prompt: Optional[str] = None
    messages: Optional[Messages] = None
    params: GenParams = field(default_factory=GenParams)
    kind = "generate"

    def __post_init__(self):
        if (self.prompt is None) == (self.messages is None):
            raise ValueError("GenerateRequest needs exactly one of prompt or messages")

    def message_dicts(self) -> list[dict]:
        return [{"role": r, "content": c} for r, c in (self.messages or ())]

    def key(self) -> str:
        return _memo_key(self, self._compute_key)

    def _compute_key(self) -> str:
        p = self.params.to_dict()
        if p["temperature"] == 0.0:  # greedy: sampling knobs do not change the answer
            p.pop("seed"); p.pop("top_p")
        return _digest(["gen", self.prompt, [list(m) for m in self.messages or ()], p])

    def length(self) -> int:
        if self.prompt is not None:
            return len(self.prompt)
        return sum(len(c) for _, c in self.messages)


Request = Union[LoglikelihoodRequest, RollingRequest, GenerateRequest]


@dataclass
class Completion:
    text: str
    finish_reason: str  # "stop" (stop sequence / EOS) or "length" (hit max_tokens)
    #: the reasoning trace a server returned in its own field (``reasoning_content``/``reasoning``)
    trace: Optional[str] = None
    #: token counts of the call that produced it: prompt_tokens, completion_tokens, reasoning_tokens
    usage: Optional[dict] = None
    #: the server's trace never ended (a reasoning parser left the answer field null)
    trace_open: Optional[bool] = None

    def extras(self) -> dict:
        return {k: v for k, v in (("trace", self.trace), ("usage", self.usage), ("trace_open", self.trace_open))
                if v is not None}


@dataclass
class LoglikelihoodResult:
    logprob: float
    is_greedy: bool


def response_to_json(kind: str, resp) -> object:
    if kind == "loglikelihood":
        return [resp.logprob, resp.is_greedy]
    if kind == "loglikelihood_rolling":
        return float(resp)
    # [text, finish] as always; a third element only when the completion carries a trace or usage,
    # so entries written before these fields existed load unchanged
    return [[c.text, c.finish_reason, c.extras()] if c.extras() else [c.text, c.finish_reason] for c in resp]


def response_from_json(kind: str, obj):
    if kind == "loglikelihood":
        return LoglikelihoodResult(float(obj[0]), bool(obj[1]))
    if kind == "loglikelihood_rolling":
        return float(obj)
    out = []
    for item in obj:
        extra = item[2] if len(item) > 2 and isinstance(item[2], dict) else {}
        out.append(Completion(item[0], item[1], extra.get("trace"), extra.get("usage"), extra.get("trace_open")))
    return out
