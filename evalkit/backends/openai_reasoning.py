"""What the OpenAI-compatible backend does differently for reasoning models.

* API reasoning models (OpenAI's o-series and gpt-5 family, and any model named with
  ``reasoning_model=true``) take ``max_completion_tokens`` instead of ``max_tokens`` (the budget
  covers the hidden reasoning tokens too) and refuse ``temperature``/``top_p``: those are not sent
  (a sampled run is then the server's default sampling; the identity says so).
* ``reasoning_effort`` (low, medium, high, ...) is sent when given, and is part of the identity.
* ``chat_template_kwargs`` (e.g. ``{"enable_thinking": false}``) go into the body of chat requests,
  as vLLM and SGLang read them, and are part of the identity (they change the prompt).
* Replies: the trace a server returns in its own field (``reasoning_content``, vLLM's
  ``--reasoning-parser`` and DeepSeek's API; ``reasoning``, newer vLLM and OpenRouter) and the
  token usage (``prompt_tokens``, ``completion_tokens``, ``completion_tokens_details.reasoning_tokens``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

# names of API models that refuse temperature/top_p and want max_completion_tokens
_REASONING_NAME = re.compile(r"^(?:[\w.-]+/)?(?:o[1-9](?:-|$)|gpt-5)", re.I)
EFFORTS = ("minimal", "low", "medium", "high")


def _flag(value, what: str) -> Optional[bool]:
    if value in (None, "auto"):
        return None
    if isinstance(value, bool):
        return value
    if str(value).lower() in ("true", "1", "yes"):
        return True
    if str(value).lower() in ("false", "0", "no"):
        return False
    raise ValueError(f"--model-args {what}={value!r}: expected true, false or auto")


@dataclass(frozen=True)
class ReasoningOptions:
    api_reasoning: bool = False          # max_completion_tokens, no temperature/top_p
    effort: Optional[str] = None
    chat_template_kwargs: dict = field(default_factory=dict)

    @classmethod
    def make(cls, model: str, reasoning_model="auto", reasoning_effort=None, chat_template_kwargs=None):
        from evalkit.backends.tokenization import chat_template_options
        flag = _flag(reasoning_model, "reasoning_model")
        api = bool(_REASONING_NAME.match(model or "")) if flag is None else flag
        if reasoning_effort is not None and str(reasoning_effort) not in EFFORTS:
            raise ValueError(f"--model-args reasoning_effort={reasoning_effort!r}: expected one of {', '.join(EFFORTS)}")
        _, kwargs, _ = chat_template_options(None, chat_template_kwargs)
        return cls(api, str(reasoning_effort) if reasoning_effort is not None else None, kwargs)

    def identity(self) -> dict:
        """Identity entries; empty for a plain model (older cache keys hold)."""
        out = {}
        if self.api_reasoning:
            out["api_reasoning"] = True
        if self.effort:
            out["reasoning_effort"] = self.effort
        if self.chat_template_kwargs:
            out["chat_template_kwargs"] = dict(sorted(self.chat_template_kwargs.items()))
        return out

    def shape_body(self, body: dict, chat: bool) -> dict:
        if self.api_reasoning:
            body["max_completion_tokens"] = body.pop("max_tokens")
            body.pop("temperature", None)
            body.pop("top_p", None)
        if self.effort:
            body["reasoning_effort"] = self.effort
        if chat and self.chat_template_kwargs:
            body["chat_template_kwargs"] = dict(self.chat_template_kwargs)
        return body


def reply_trace(choice: dict) -> Optional[str]:
    """The reasoning trace of one reply choice, from a chat ``message`` or a completions choice."""
    src = choice.get("message") if isinstance(choice.get("message"), dict) else choice
    for key in ("reasoning_content", "reasoning"):
        v = src.get(key)
        if isinstance(v, str):
            return v
    return None


def reply_usage(resp: dict) -> Optional[dict]:
    """Prompt, completion and reasoning token counts of a reply (None when it reports none)."""
    u = resp.get("usage") if isinstance(resp, dict) else None
    if not isinstance(u, dict):
        return None
    out = {}
    for k in ("prompt_tokens", "completion_tokens"):
        if isinstance(u.get(k), int) and not isinstance(u.get(k), bool):
            out[k] = u[k]
    details = u.get("completion_tokens_details")
    if isinstance(details, dict) and isinstance(details.get("reasoning_tokens"), int):
        out["reasoning_tokens"] = details["reasoning_tokens"]
    elif isinstance(u.get("reasoning_tokens"), int):
        out["reasoning_tokens"] = u["reasoning_tokens"]
    return out or None
