"""Budget figures of a generation task, computed from its sample rows only (so a cached, resumed,
merged or rescored run reports the same figures as a fresh one; backend counters cannot):

* ``hit_token_limit``: share of samples whose (first) completion stopped at ``max_tokens``;
* ``unclosed_trace``: share whose reasoning trace never ended (never scored as an answer);
* ``no_answer``: share with no parseable answer (empty after the trace, or nothing extracted);
* ``with_trace``: share that had a trace at all;
* ``mean_trace_chars`` / ``mean_answer_chars`` always, and ``mean_trace_tokens`` /
  ``mean_answer_tokens`` when every sample has token counts (``token_source`` says from where:
  the API's usage or the model's tokenizer);
* ``usage``: prompt, completion and reasoning tokens summed over the samples that report them;
* ``split`` (when some responses stopped at ``max_tokens`` and some did not): per sample metric,
  the mean on ``finished`` and on ``truncated`` samples, each with its CI, beside the ``overall``
  one (olmo-eval #399: 0.956 on finished answers against 0.241 on truncated ones, hidden in one
  average); ``split_warning`` says it in words when the truncated share is over 5%.

``warnings`` lists the shares over ``WARN_SHARE`` (5%) in plain words; ``evalkit run`` prints them.
"""
from __future__ import annotations

from typing import Callable, Optional

from evalkit.scoring.stats import mean_metric

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


def finish_split(gen: list, higher_is_better: Callable[[str], bool] = lambda m: True) -> dict:
    """{metric: {overall, finished, truncated}}: each per-sample metric's mean (with CI) over all
    generation rows, over those that finished and over those cut at max_tokens."""
    cut = [r["extra"]["finish_reason"] == "length" for r in gen]
    names = [m for m in (gen[0].get("metrics") or {})
             if all(isinstance((r.get("metrics") or {}).get(m), (int, float)) for r in gen)]
    out = {}
    for m in names:
        hib = higher_is_better(m)
        vals = [float(r["metrics"][m]) for r in gen]
        out[m] = {"overall": mean_metric(vals, hib),
                  "finished": mean_metric([v for v, c in zip(vals, cut) if not c], hib),
                  "truncated": mean_metric([v for v, c in zip(vals, cut) if c], hib)}
    return out


def split_warning(b: dict, metric: Optional[str] = None) -> Optional[str]:
    """"exact_match 0.956 on 80 finished, 0.241 on 20 truncated (20%)" when over WARN_SHARE."""
    split = b.get("split") or {}
    if b.get("hit_token_limit", 0) <= WARN_SHARE or not split:
        return None
    m = metric if metric in split else next(iter(split))
    f, t = split[m]["finished"], split[m]["truncated"]
    return (f"{m} {f['value']:.3f} on {f['n']} finished responses, {t['value']:.3f} on {t['n']} truncated at "
            f"max_tokens ({b['hit_token_limit']:.0%}): the average mixes the two")


def task_budget(rows: list, higher_is_better: Callable[[str], bool] = lambda m: True) -> Optional[dict]:
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
    if 0 < out["hit_token_limit"] < 1:
        out["split"] = finish_split(gen, higher_is_better)
    out["warnings"] = warnings_of(out)
    return out


def warnings_of(b: dict) -> list:
    out = [f"{b[k]:.0%} of {b['n']} responses {_WHAT[k]}" for k in SHARES if b.get(k, 0) > WARN_SHARE]
    split = split_warning(b)
    return out + ([split] if split else [])


def run_usage(tasks: dict) -> dict:
    """Token usage summed over the tasks of a run record (``{task: entry dict}``)."""
    total = {}
    for t in tasks.values():
        for k, v in ((t.get("budget") or {}).get("usage") or {}).items():
            total[k] = total.get(k, 0) + v
    return total
