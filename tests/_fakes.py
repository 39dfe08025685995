"""One scripted fake backend for the tests: how it answers is data or a function of the request.

``ScriptedBackend(reply, loglikelihood)`` answers

* generations and tool turns (``GenerateRequest``, ``ToolChatRequest``) with ``reply``: one text for
  every request, a list of texts (the i-th request answered gets item i, cycling), or a function of
  the request (its ``prompt`` or ``messages``, its ``params``: ``seed``, ``n``, ``max_tokens``, ...)
  giving a text, a ``Completion`` (a cut one with finish_reason "length", one with tool calls) or the
  list of the request's ``params.n`` completions. A text or a ``Completion`` stands for all ``n``. A
  text answering a tool turn is read with the request's tool parser, as a local backend does; texts
  carry ``usage`` when given;
* loglikelihoods with ``loglikelihood``: a number (not greedy), a ``(logprob, is_greedy)`` pair, a
  ``LoglikelihoodResult``, or a function of the request giving one (``hashed_logprob``: distinct,
  deterministic values).

A kind without its answer raises NotImplementedError, as does perplexity. Every call is recorded
before it is answered: ``calls`` holds ``(kind, requests)`` per call (``calls[-1]`` is the chunk being
answered), ``requests`` every request in order, ``prompts`` the prompts of the generations and
``answers`` each request's answer (as ``_lm_eval_replay.Recording`` keeps them for a replay).
``fail_after``: a KeyboardInterrupt instead of the answer once that many requests were answered (a
killed run). ``tokenizer`` (returned by ``text_tokenizer()``, which only then exists), ``max_length``
and ``chat_template`` (a function of the messages) give a backend those capabilities. ``first_line``
is a reply echoing the prompt's first line.
"""
from __future__ import annotations

import hashlib
from typing import Callable, Optional, Union

from evalkit.backends.base import Backend
from evalkit.taskapi import tool_parsers
from evalkit.taskapi.requests import Completion, LoglikelihoodResult

Reply = Union[str, list, Callable]


def hashed_logprob(request, salt: str = "") -> float:
    """A deterministic logprob, distinct per (context, continuation): two salts are two 'models'."""
    digest = hashlib.sha256((salt + request.context + request.continuation).encode()).hexdigest()
    return -int(digest[:6], 16) / 1e5


def first_line(request) -> str:
    """A reply: the first line of the prompt (of the last message's text in a chat request)."""
    text = request.prompt if request.prompt is not None else request.messages[-1][1]
    return text.split("\n")[0]


class ScriptedBackend(Backend):
    """A backend answering from data or functions of the request, recording what it was asked."""

    def __init__(self, reply: Optional[Reply] = None, loglikelihood=None, *, name: str = "scripted",
                 identity: Optional[dict] = None, usage: Optional[dict] = None, chunk_size: int = 64,
                 fail_after: Optional[int] = None, tokenizer=None, max_length: Optional[int] = None,
                 chat_template: Optional[Callable] = None):
        self.name, self.chunk_size, self.fail_after = name, chunk_size, fail_after
        self._reply, self._logprob, self._usage = reply, loglikelihood, usage
        self._identity = identity if identity is not None else {"model": name}
        self._max_length, self._chat_template = max_length, chat_template
        if tokenizer is not None:  # only then: callers ask hasattr(backend, "text_tokenizer")
            self.text_tokenizer = lambda: tokenizer
        self.calls: list[tuple[str, list]] = []
        self.requests: list = []
        self.answers: dict = {}

    @property
    def prompts(self) -> list:
        return [r.prompt for r in self.requests if r.kind == "generate"]

    def identity(self) -> dict:
        return self._identity

    @property
    def max_length(self) -> Optional[int]:
        return self._max_length

    def apply_chat_template(self, messages: list[dict]) -> str:
        if self._chat_template is None:
            return super().apply_chat_template(messages)
        return self._chat_template(messages)

    def generate(self, requests):
        return self._answer("generate", requests, self._completions)

    def tool_chat(self, requests):
        return self._answer("tool_chat", requests, self._completions)

    def loglikelihood(self, requests):
        return self._answer("loglikelihood", requests, self._loglikelihood)

    def loglikelihood_rolling(self, requests):
        raise NotImplementedError(f"backend {self.name} scores no perplexity")

    def _answer(self, kind: str, requests, answer) -> list:
        if (self._reply if kind != "loglikelihood" else self._logprob) is None:
            raise NotImplementedError(f"backend {self.name} has no {kind} answers")
        self.calls.append((kind, list(requests)))
        out = []
        for r in requests:
            if self.fail_after is not None and len(self.requests) >= self.fail_after:
                raise KeyboardInterrupt("killed")
            self.requests.append(r)
            self.answers[r] = answer(r)
            out.append(self.answers[r])
        return out

    def _completions(self, r) -> list[Completion]:
        if isinstance(self._reply, list):
            got = self._reply[(len(self.requests) - 1) % len(self._reply)]
        else:
            got = self._reply(r) if callable(self._reply) else self._reply
        if isinstance(got, list):
            return got
        return [got if isinstance(got, Completion) else self._from_text(r, got)] * r.params.n

    def _from_text(self, r, text: str) -> Completion:
        usage = dict(self._usage) if self._usage else None
        if r.kind != "tool_chat":
            return Completion(text, "stop", usage=usage)
        got = tool_parsers.parse(r.parser, text, r.tool_dicts()) if r.parser else tool_parsers.ParsedCalls(text, [])
        return Completion(text, "stop", usage=usage, tool_calls=got.calls, content=got.content, tool_error=got.error)

    def _loglikelihood(self, r) -> LoglikelihoodResult:
        got = self._logprob(r) if callable(self._logprob) else self._logprob
        if isinstance(got, LoglikelihoodResult):
            return got
        if isinstance(got, tuple):
            return LoglikelihoodResult(float(got[0]), bool(got[1]))
        return LoglikelihoodResult(float(got), False)
