"""Budget figures of a generation task, computed from its sample rows only (so a cached, resumed,
merged or rescored run reports the same figures as a fresh one; backend counters cannot):

* ``hit_token_limit``: share of samples (completions, in a repeat run) that stopped at ``max_tokens``;
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

Repeat runs (``--repeats K``, ``--gen-kwargs n=K``): every figure counts every completion of every
sample, from the per-completion list the run records (``extra.completions``, see
``evalkit.run.traces``): ``n`` is the number of completions (``samples`` beside it, the number of rows),
each share is over completions, the means are per completion and ``usage`` is summed over all of them
(the row's ``extra.usage`` already holds its completions' sum). A completion's answer is unparsed when
its own extracted answer is (a repeat row's ``extracted`` lists one per completion). The ``split`` is
over completions, each with its own metric values: ``extra.repeats.sample_metrics`` (tasks scored
through ``evalkit.taskapi.repeats``), else the 0/1 verdicts ``extra.repeats.correct`` under the name
``extra.repeats.metric`` (the code tasks' ``passed``); the K completions of a problem are not
independent, so its intervals use the cluster-robust standard error over problems (as
``evalkit.scoring.repeats.clustered_se``, with the G/(G-1) small-sample factor, so that one completion
per problem gives ``mean_metric``'s standard error) and a t interval with G-1 degrees of freedom.
Rows that record no per-completion values (a task that scores its K completions only together) get
no ``split``: classing a problem by one of its completions would be arbitrary. Rows written before
``extra.completions`` existed count as one completion each, as before.
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple, Optional

from scipy import stats as sps

from evalkit.records.values import MetricValue
from evalkit.scoring.stats import mean_metric

WARN_SHARE = 0.05
INVALID_MARKS = (None, "", "[invalid]")
SHARES = ("hit_token_limit", "unclosed_trace", "no_answer")
#: the advice for answers cut at max_tokens (a run under --reasoning is told ``REASONING_ADVICE`` instead)
MAX_TOKENS_ADVICE = "raise --gen-kwargs max_tokens, or use --reasoning"
REASONING_ADVICE = "raise --thinking-budget"
_WHAT = {"hit_token_limit": f"stopped at max_tokens ({MAX_TOKENS_ADVICE})",
         "unclosed_trace": "never closed their reasoning trace (not scored as answers)",
         "no_answer": "have no parseable answer"}


def _unparsed(x) -> bool:
    if isinstance(x, dict):
        return all(_unparsed(v) for v in x.values()) if x else True
    if isinstance(x, (list, tuple)):
        return all(_unparsed(v) for v in x) if x else True
    return x in INVALID_MARKS


class Unit(NamedTuple):
    """One completion as the figures see it: its row's index (the problem), finish reason, thinking
    info (``extra.thinking`` or a ``extra.completions`` entry), answer text when it had no trace,
    extracted answer, and metric values (None: the row records none for this completion)."""

    row: int
    finish_reason: Optional[str]
    thinking: dict
    answer: Optional[str]
    extracted: object
    metrics: Optional[dict]


def _str_at(xs, i: int) -> str:
    x = xs[i] if isinstance(xs, list) and i < len(xs) else ""
    return x if isinstance(x, str) else ""


def _per_completion_metrics(extra: dict, k: int) -> list:
    rep = extra.get("repeats") if isinstance(extra.get("repeats"), dict) else {}
    per = rep.get("sample_metrics")
    if isinstance(per, list) and len(per) == k and all(isinstance(m, dict) for m in per):
        return per
    correct = rep.get("correct")
    if isinstance(correct, list) and len(correct) == k:
        return [{rep.get("metric") or "correct": float(c)} for c in correct]
    return [None] * k


def units_of(rows: list) -> list[Unit]:
    """Every completion of the generation rows (a row without ``extra.completions``: one, as recorded)."""
    out = []
    for i, r in enumerate(rows):
        extra = r["extra"]
        comps = extra.get("completions")
        if not (isinstance(comps, list) and comps and all(isinstance(c, dict) for c in comps)):
            t = extra.get("thinking") or {"status": "none"}
            answer = _str_at(r.get("responses") or [], 0) if t.get("status", "none") == "none" else None
            out.append(Unit(i, extra["finish_reason"], t, answer, r.get("extracted"), r.get("metrics") or {}))
            continue
        k, ex, resp = len(comps), r.get("extracted"), r.get("responses") or []
        per_ex = ex if isinstance(ex, list) and len(ex) == k else [ex] * k
        for j, (c, m) in enumerate(zip(comps, _per_completion_metrics(extra, k))):
            answer = _str_at(resp, j) if c.get("status", "none") == "none" and len(resp) == k else None
            out.append(Unit(i, c.get("finish_reason"), c, answer, per_ex[j], m))
    return out


def _clustered_mean(vals: list, rows: list, hib: bool) -> MetricValue:
    """Mean over completions with the cluster-robust interval over problems (module docstring)."""
    n, groups = len(vals), {}
    if n == 0 or len(set(rows)) == n:
        return mean_metric(vals, hib)
    m = sum(vals) / n
    for v, r in zip(vals, rows):
        groups[r] = groups.get(r, 0.0) + (v - m)
    g = len(groups)
    if g < 2:
        return MetricValue(m, None, None, None, n, "mean", hib)
    se = math.sqrt(sum(d * d for d in groups.values()) * g / (g - 1)) / n
    t = float(sps.t.ppf(0.975, g - 1))
    lo, hi = m - t * se, m + t * se
    if min(vals) >= 0 and max(vals) <= 1:
        lo, hi = max(0.0, lo), min(1.0, hi)
    return MetricValue(m, se, lo, hi, n, "mean", hib)


def finish_split(gen: list, higher_is_better: Callable[[str], bool] = lambda m: True) -> Optional[dict]:
    """{metric: {overall, finished, truncated}}: each per-sample metric's mean (with CI) over all
    generation rows' completions, over those that finished and over those cut at max_tokens
    (None when some completion has no metric values of its own)."""
    units = units_of(gen)
    if not units or any(u.metrics is None for u in units):
        return None
    cut = [u.finish_reason == "length" for u in units]
    rows = [u.row for u in units]
    names = [m for m in units[0].metrics if all(isinstance(u.metrics.get(m), (int, float)) for u in units)]
    out = {}
    for m in names:
        hib = higher_is_better(m)
        vals = [float(u.metrics[m]) for u in units]
        part = {"overall": [True] * len(vals), "finished": [not c for c in cut], "truncated": cut}
        out[m] = {p: _clustered_mean([v for v, w in zip(vals, keep) if w], [r for r, w in zip(rows, keep) if w], hib)
                  for p, keep in part.items()}
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
    units = units_of(gen)
    n = len(units)
    uses_extracted = any(u.extracted is not None for u in units)
    thinking = [u.thinking for u in units]
    answer_chars = [len(u.answer) if u.answer is not None else int(u.thinking.get("answer_chars", 0)) for u in units]
    empty = [c == 0 or (u.answer is not None and not u.answer.strip()) for u, c in zip(units, answer_chars)]
    no_answer = [e or (uses_extracted and _unparsed(u.extracted)) for e, u in zip(empty, units)]
    out = {"n": n} if n == len(gen) else {"n": n, "samples": len(gen)}
    out.update({
        "hit_token_limit": sum(u.finish_reason == "length" for u in units) / n,
        "unclosed_trace": sum(t.get("status") == "unclosed" for t in thinking) / n,
        "no_answer": sum(no_answer) / n,
        "with_trace": sum(t.get("status", "none") != "none" for t in thinking) / n,
        "mean_trace_chars": sum(int(t.get("trace_chars", 0)) for t in thinking) / n,
        "mean_answer_chars": sum(answer_chars) / n,
    })
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
        split = finish_split(gen, higher_is_better)
        if split is not None:
            out["split"] = split
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
