"""Budget figures of a generation task, computed from its sample rows only (so a cached, resumed,
merged or rescored run reports the same figures as a fresh one; backend counters cannot):

* ``hit_token_limit``: share of samples whose (first) completion stopped at ``max_tokens``;
* ``unclosed_trace``: share whose reasoning trace never ended (never scored as an answer);
* ``no_answer``: share with no parseable answer (empty after the trace, or nothing extracted);
* ``with_trace``: share that had a trace at all;
* ``mean_trace_chars`` / ``mean_answer_chars`` always, and ``mean_trace_tokens`` /
  ``mean_answer_tokens`` when every sample has token counts (``token_source`` says from where:
  the API's usage or the model's tokenizer);
* ``usage``: prompt, completion and reasoning tokens summed over the samples that report them.

``warnings`` lists the shares over ``WARN_SHARE`` (5%) in plain words; ``evalkit run`` prints them.
"""
from __future__ import annotations

from typing import Optional

WARN_SHARE = 0.05
INVALID_MARKS = (None, "", "[invalid]")
SHARES = ("hit_token_limit", "unclosed_trace", "no_answer")
_WHAT = {"hit_token_limit": "stopped at max_tokens (raise --gen-kwargs max_tokens, or use --reasoning)",
         "unclosed_trace": "never closed their reasoning trace (not scored as answers)",
         "no_answer": "have no parseable answer"}


def _unparsed(x) -> bool:
    if isinstance(x, dict):
        return all(_unparsed(v) for v in x.values()) if x else True
    if isinstance(x, (list, tuple)):
        return all(_unparsed(v) for v in x) if x else True
    return x in INVALID_MARKS


def _answer_text(row: dict) -> str:
    resp = row.get("responses") or []
    first = resp[0] if resp else ""
    return first if isinstance(first, str) else ""


def task_budget(rows: list) -> Optional[dict]:
    """The figures for one task's sample rows (None when no row is a generation)."""
    gen = [r for r in rows if isinstance(r.get("extra"), dict) and "finish_reason" in r["extra"]]
    if not gen:
        return None
    n = len(gen)
    uses_extracted = any(r.get("extracted") is not None for r in gen)
    thinking = [r["extra"].get("thinking") or {"status": "none"} for r in gen]
    answers = [_answer_text(r) if t.get("status", "none") == "none" else None for r, t in zip(gen, thinking)]
    answer_chars = [len(a) if a is not None else int(t.get("answer_chars", 0)) for a, t in zip(answers, thinking)]
    empty = [c == 0 or (a is not None and not a.strip()) for a, c in zip(answers, answer_chars)]
    no_answer = [e or (uses_extracted and _unparsed(r.get("extracted"))) for e, r in zip(empty, gen)]
    out = {
        "n": n,
        "hit_token_limit": sum(r["extra"]["finish_reason"] == "length" for r in gen) / n,
        "unclosed_trace": sum(t.get("status") == "unclosed" for t in thinking) / n,
        "no_answer": sum(no_answer) / n,
        "with_trace": sum(t.get("status", "none") != "none" for t in thinking) / n,
        "mean_trace_chars": sum(int(t.get("trace_chars", 0)) for t in thinking) / n,
        "mean_answer_chars": sum(answer_chars) / n,
    }
    traced = [t for t in thinking if t.get("status", "none") != "none"]
    if traced and len(traced) == n and all("trace_tokens" in t for t in traced):
        out["mean_trace_tokens"] = sum(t["trace_tokens"] for t in traced) / n
        out["mean_answer_tokens"] = sum(t["answer_tokens"] for t in traced) / n
        out["token_source"] = sorted({t.get("token_source", "?") for t in traced})[0]
    usage = {}
    for r in gen:
        for k, v in (r["extra"].get("usage") or {}).items():
            if isinstance(v, int):
                usage[k] = usage.get(k, 0) + v
    if usage:
        out["usage"] = usage
    out["warnings"] = warnings_of(out)
    return out


def warnings_of(b: dict) -> list:
    return [f"{b[k]:.0%} of {b['n']} responses {_WHAT[k]}" for k in SHARES if b.get(k, 0) > WARN_SHARE]


def run_usage(tasks: dict) -> dict:
    """Token usage summed over the tasks of a run record (``{task: entry dict}``)."""
    total = {}
    for t in tasks.values():
        for k, v in ((t.get("budget") or {}).get("usage") or {}).items():
            total[k] = total.get(k, 0) + v
    return total
