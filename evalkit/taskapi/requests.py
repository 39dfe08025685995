"""The three request kinds every backend answers (as lm-eval has them), the reward kind that
reward-model backends answer, and their responses.

Requests are frozen, hashable dataclasses: the engine dedupes identical requests across tasks and
keys the response cache on ``request.key()``, a stable digest of the request's content.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
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
    """How a generation task samples: greedy with at most 256 new tokens by default; ``temperature`` > 0
    samples (seeded per doc from the run seed), ``n`` completions per prompt, ``stop`` sequences."""

    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    n: int = 1
    stop: tuple = ()
    seed: Optional[int] = None
    top_k: int = 0                   # sampling: 0 = no top-k cut
    min_p: float = 0.0               # sampling: 0 = no min-p cut
    repetition_penalty: float = 1.0  # greedy and sampling (transformers/vLLM definition); 1 = none

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def to_dict(self) -> dict:
        d = {"max_tokens": self.max_tokens, "temperature": self.temperature, "top_p": self.top_p,
             "n": self.n, "stop": list(self.stop), "seed": self.seed}
        for k, neutral in EXTRA_SAMPLING.items():  # named only when set: cache keys of other runs stay
            if getattr(self, k) != neutral:
                d[k] = getattr(self, k)
        return d


#: lm-eval's generation knobs beyond evalkit's first set, with the value that turns each off
EXTRA_SAMPLING = {"top_k": 0, "min_p": 0.0, "repetition_penalty": 1.0}


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
            p.pop("seed"); p.pop("top_p"); p.pop("top_k", None); p.pop("min_p", None)
        return _digest(["gen", self.prompt, [list(m) for m in self.messages or ()], p])

    def length(self) -> int:
        if self.prompt is not None:
            return len(self.prompt)
        return sum(len(c) for _, c in self.messages)


@dataclass(frozen=True)
class RewardRequest:
    """A reward model's score of one conversation (``messages``, rendered with the reward model's
    chat template; the last message is the response judged) or of raw ``text`` (scored as given).
    Answered with one float; with ``steps`` (a process reward model) with one float per step."""

    messages: Optional[Messages] = None
    text: Optional[str] = None
    steps: bool = False
    kind = "reward"

    def __post_init__(self):
        if (self.text is None) == (self.messages is None):
            raise ValueError("RewardRequest needs exactly one of messages or text")

    @classmethod
    def pair(cls, prompt: str, response: str, steps: bool = False) -> "RewardRequest":
        return cls(messages=(("user", prompt), ("assistant", response)), steps=steps)

    def message_dicts(self) -> list[dict]:
        return [{"role": r, "content": c} for r, c in (self.messages or ())]

    def key(self) -> str:
        return _memo_key(self, lambda: _digest(["reward", self.text, [list(m) for m in self.messages or ()],
                                                self.steps]))

    def length(self) -> int:
        return len(self.text) if self.text is not None else sum(len(c) for _, c in self.messages)


@dataclass(frozen=True)
class EmbedRequest:
    """The embedding vector of a text (retrieval): answered with a list of floats."""

    text: str
    kind = "embed"

    def key(self) -> str:
        return _memo_key(self, lambda: _digest(["embed", self.text]))

    def length(self) -> int:
        return len(self.text)


@dataclass(frozen=True)
class ToolChatRequest:
    """One model turn of an agent episode: chat ``messages`` (OpenAI format, canonical JSON: assistant
    messages may carry ``tool_calls``, ``tool`` messages results) and ``tools`` (OpenAI function
    schemas, canonical JSON; ``"[]"``: none given to the model). Answered with ``Completion``s whose
    ``tool_calls`` the backend parsed (``parser``: a name in ``evalkit.taskapi.tool_parsers``; a
    server's own parser when it returns ``tool_calls`` itself)."""

    messages: str
    tools: str = "[]"
    params: GenParams = field(default_factory=GenParams)
    parser: Optional[str] = None
    kind = "tool_chat"

    def message_dicts(self) -> list[dict]:
        return json.loads(self.messages)

    def tool_dicts(self) -> list[dict]:
        return json.loads(self.tools)

    def key(self) -> str:
        def compute():
            p = self.params.to_dict()
            if p["temperature"] == 0.0:
                p.pop("seed"); p.pop("top_p"); p.pop("top_k", None); p.pop("min_p", None)
            return _digest(["tool_chat", self.messages, self.tools, self.parser, p])
        return _memo_key(self, compute)

    def length(self) -> int:
        return len(self.messages) + len(self.tools)


Request = Union[LoglikelihoodRequest, RollingRequest, GenerateRequest, RewardRequest, EmbedRequest, ToolChatRequest]


@dataclass
class Completion:
    """One generated answer: its ``text`` and why it stopped, with what the server said beside it."""

    text: str
    finish_reason: str  # "stop" (stop sequence / EOS) or "length" (hit max_tokens)
    #: the reasoning trace a server returned in its own field (``reasoning_content``/``reasoning``)
    trace: Optional[str] = None
    #: token counts of the call that produced it: prompt_tokens, completion_tokens, reasoning_tokens
    usage: Optional[dict] = None
    #: the server's trace never ended (a reasoning parser left the answer field null)
    trace_open: Optional[bool] = None
    #: tool_chat: the calls read from the reply (``{"name", "arguments"}``; ``raw_arguments`` when not
    #: a JSON object), the reply's text that is not a call, and why a call-like text was not readable
    tool_calls: Optional[list] = None
    content: Optional[str] = None
    tool_error: Optional[str] = None

    _EXTRAS = ("trace", "usage", "trace_open", "tool_calls", "content", "tool_error")

    def extras(self) -> dict:
        return {k: getattr(self, k) for k in self._EXTRAS if getattr(self, k) is not None}


@dataclass
class LoglikelihoodResult:
    logprob: float
    is_greedy: bool


def response_to_json(kind: str, resp) -> object:
    if kind == "loglikelihood":
        return [resp.logprob, resp.is_greedy]
    if kind == "loglikelihood_rolling":
        return float(resp)
    if kind == "reward":  # a float, or a list of per-step floats
        return [float(x) for x in resp] if isinstance(resp, list) else float(resp)
    if kind == "embed":
        return [float(x) for x in resp]
    # [text, finish] as always; a third element only when the completion carries a trace or usage,
    # so entries written before these fields existed load unchanged
    return [[c.text, c.finish_reason, c.extras()] if c.extras() else [c.text, c.finish_reason] for c in resp]


def response_from_json(kind: str, obj):
    if kind == "loglikelihood":
        return LoglikelihoodResult(float(obj[0]), bool(obj[1]))
    if kind == "loglikelihood_rolling":
        return float(obj)
    if kind == "reward":
        return [float(x) for x in obj] if isinstance(obj, list) else float(obj)
    if kind == "embed":
        return [float(x) for x in obj]
    out = []
    for item in obj:
        extra = item[2] if len(item) > 2 and isinstance(item[2], dict) else {}
        out.append(Completion(item[0], item[1], **{k: extra.get(k) for k in Completion._EXTRAS}))
    return out
