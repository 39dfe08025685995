"""What a backend hands the engine is checked before it is cached: a malformed answer must never be
committed (it would be served from the cache for good, scored as if the model had said it)."""
from __future__ import annotations

import math
from typing import Optional

from evalkit.taskapi.requests import Completion, LoglikelihoodResult


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def problem(kind: str, request, result) -> Optional[str]:
    """Why ``result`` cannot be the answer to ``request`` (None when it can)."""
    if kind == "loglikelihood":
        if not isinstance(result, LoglikelihoodResult):
            return f"expected a loglikelihood result, got {type(result).__name__}"
        if not _finite(result.logprob) or result.logprob > 1e-4:
            return f"log-probability {result.logprob!r} is not a finite number <= 0"
        if not isinstance(result.is_greedy, bool):
            return f"is_greedy {result.is_greedy!r} is not a boolean"
        return None
    if kind == "loglikelihood_rolling":
        if not _finite(result) or result > 1e-4:
            return f"log-probability {result!r} is not a finite number <= 0"
        return None
    if kind == "reward":
        if request.steps:
            if not isinstance(result, list) or not all(_finite(x) for x in result):
                return f"expected a list of finite per-step rewards, got {result!r}"[:200]
            return None
        return None if _finite(result) else f"reward {result!r} is not a finite number"
    if kind == "embed":
        if not isinstance(result, list) or not result or not all(_finite(x) for x in result):
            return "expected a non-empty list of finite floats (an embedding)"
        return None
    if not isinstance(result, list) or not all(isinstance(c, Completion) for c in result):
        return f"expected a list of completions, got {type(result).__name__}"
    want = int(request.params.n)
    if len(result) != want:
        return f"{len(result)} completions for n={want}"
    for c in result:
        if not isinstance(c.text, str):
            return f"completion text is {type(c.text).__name__}, not a string"
        if c.finish_reason not in ("stop", "length"):
            return f"finish reason {c.finish_reason!r}"
        if c.trace is not None and not isinstance(c.trace, str):
            return f"reasoning trace is {type(c.trace).__name__}, not a string"
        if c.usage is not None and not isinstance(c.usage, dict):
            return f"usage is {type(c.usage).__name__}, not an object"
        if kind == "tool_chat":
            if not isinstance(c.tool_calls, list) or not all(
                    isinstance(t, dict) and isinstance(t.get("name"), str) and isinstance(t.get("arguments"), dict)
                    for t in c.tool_calls):
                return "tool calls are not a list of {name, arguments} objects"
    return None
