"""Backend parity: the same requests through two backends, compared request by request and by score.

``collect`` runs one backend over the tasks of a run config exactly as ``evalkit run`` would (same
prompts, same engine and cache) and keeps every raw answer next to the scored samples. ``compare``
lines two collections up per task and reports:

* loglikelihood requests: absolute logprob differences (max, mean, 99th percentile) and how often
  the is-greedy flags agree; perplexity requests: the same on the rolling totals;
* greedy generation: the share of requests whose completions are identical, and where they are not,
  where the texts start to differ;
* per-doc predictions (``extracted``: the chosen option of a multiple-choice item, the extracted
  answer of a generation task): agreement share, with the disagreeing items listed (their logprob
  margins for multiple choice, so a near-tie reads as one);
* every metric of both runs and the difference, in points for 0-1 metrics.

Backends are run one after the other (collect, close, next), so two large models never share memory.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

from evalkit.run import runner
from evalkit.taskapi.requests import Completion, LoglikelihoodResult
from evalkit.run.runner import RunConfig


@dataclass
class Collected:
    """One backend's answers: per task, the requests and answers per doc, the sample rows, metrics."""

    name: str
    backend: str
    identity_hash: str
    tasks: dict = field(default_factory=dict)  # task -> {"requests", "answers", "rows", "entry" (TaskEntry), "output_type"}


def collect(backend, config: RunConfig, cache, progress=False) -> Collected:
    """The run's phases on one backend exactly as ``evaluate`` runs them (plan, answer, score,
    post-process), keeping the raw answers."""
    p = runner.plan(config, backend)
    answers, _ = runner.answer(p, backend, cache, progress)
    p.too_long = runner.prompts_over_context(p.task_runs, backend)
    entries, rows, _ = runner.post_process(p, runner.score(p, answers, runner.token_counter(backend)))
    out = Collected(backend.display_name, backend.name, backend.identity_hash())
    for tr in p.task_runs:
        name = tr.task.name
        out.tasks[name] = {"requests": tr.requests, "answers": [[answers[r.key()] for r in reqs] for reqs in tr.requests],
                           "rows": rows[name], "entry": entries[name], "output_type": tr.task.output_type}
    return out


def _quantile(xs: list[float], q: float) -> float:
    if not xs:
        return 0.0
    s = sorted(xs)
    return s[min(len(s) - 1, int(math.ceil(q * len(s))) - 1)]


def _first_difference(a: str, b: str) -> int:
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def _margin(responses: list) -> Optional[float]:
    """Logprob gap between the best and second-best choice of a multiple-choice sample."""
    lls = sorted((r[0] for r in responses if isinstance(r, (list, tuple)) and r), reverse=True)
    return lls[0] - lls[1] if len(lls) > 1 else None


def compare_task(ta: dict, tb: dict, max_examples: int = 10) -> dict:
    ll_diffs, greedy_agree, greedy_n, roll_diffs = [], 0, 0, []
    gen_same, gen_n, gen_examples = 0, 0, []
    for d, (reqs, ans_a, ans_b) in enumerate(zip(ta["requests"], ta["answers"], tb["answers"])):
        for req, x, y in zip(reqs, ans_a, ans_b):
            if isinstance(x, LoglikelihoodResult):
                ll_diffs.append(abs(x.logprob - y.logprob))
                greedy_n += 1
                greedy_agree += x.is_greedy == y.is_greedy
            elif isinstance(x, float):
                roll_diffs.append(abs(x - y))
            elif isinstance(x, list) and x and isinstance(x[0], Completion) and req.params.greedy:
                gen_n += 1
                ta_texts, tb_texts = [c.text for c in x], [c.text for c in y]
                if ta_texts == tb_texts:
                    gen_same += 1
                elif len(gen_examples) < max_examples:
                    at = _first_difference(ta_texts[0], tb_texts[0])
                    gen_examples.append({"doc_id": ta["rows"][d]["doc_id"], "first_difference_at_char": at,
                                         "a": ta_texts[0][max(0, at - 40): at + 60],
                                         "b": tb_texts[0][max(0, at - 40): at + 60]})
    rows_a, rows_b = ta["rows"], tb["rows"]
    pred_same, pred_examples = 0, []
    for ra, rb in zip(rows_a, rows_b):
        if ra.get("extracted") == rb.get("extracted"):
            pred_same += 1
        elif len(pred_examples) < max_examples:
            ex = {"doc_id": ra["doc_id"], "target": ra.get("target"), "a": ra.get("extracted"),
                  "b": rb.get("extracted")}
            if ta["output_type"] == "multiple_choice":
                ex["margin_a"], ex["margin_b"] = _margin(ra["responses"]), _margin(rb["responses"])
            pred_examples.append(ex)
    metrics = {}
    ma, mb = ta["entry"].metrics, tb["entry"].metrics
    for name in ma:
        if name not in mb:
            continue
        va, vb = ma[name].value, mb[name].value
        if not (math.isfinite(va) and math.isfinite(vb)):
            continue
        diff = vb - va
        unit = 0 <= va <= 1 and 0 <= vb <= 1
        metrics[name] = {"a": va, "b": vb, "diff": diff, "diff_points": 100 * diff if unit else None}
    report = {"n_docs": len(rows_a), "output_type": ta["output_type"], "metrics": metrics,
              "prediction_agreement": pred_same / len(rows_a) if rows_a else None,
              "prediction_disagreements": pred_examples}
    if ll_diffs:
        report["loglikelihood"] = {"n": len(ll_diffs), "max_abs_diff": max(ll_diffs),
                                   "mean_abs_diff": sum(ll_diffs) / len(ll_diffs),
                                   "p99_abs_diff": _quantile(ll_diffs, .99),
                                   "is_greedy_agreement": greedy_agree / greedy_n}
    if roll_diffs:
        report["loglikelihood_rolling"] = {"n": len(roll_diffs), "max_abs_diff": max(roll_diffs),
                                           "mean_abs_diff": sum(roll_diffs) / len(roll_diffs)}
    if gen_n:
        report["greedy_generation"] = {"n": gen_n, "identical": gen_same / gen_n, "differences": gen_examples}
    return report


def compare(a: Collected, b: Collected, max_examples: int = 10) -> dict:
    if a.tasks.keys() != b.tasks.keys():
        raise ValueError("parity: the two collections ran different tasks")
    return {"model_a": f"{a.backend}:{a.name}", "model_b": f"{b.backend}:{b.name}",
            "identity_a": a.identity_hash, "identity_b": b.identity_hash,
            "tasks": {t: compare_task(a.tasks[t], b.tasks[t], max_examples) for t in a.tasks}}


def check(report: dict, min_prediction_agreement: float, max_score_diff_points: float) -> list[str]:
    """Failed parity criteria as readable lines (empty: parity holds)."""
    bad = []
    for t, r in report["tasks"].items():
        agree = r.get("prediction_agreement")
        if agree is not None and agree < min_prediction_agreement:
            bad.append(f"{t}: predictions agree on {agree:.1%} of docs (< {min_prediction_agreement:.0%})")
        for m, v in r["metrics"].items():
            if v["diff_points"] is not None and abs(v["diff_points"]) > max_score_diff_points:
                bad.append(f"{t}: {m} differs by {v['diff_points']:+.2f} points (> {max_score_diff_points})")
    return bad


def format_report(report: dict) -> str:
    lines = [f"parity: A = {report['model_a']}   B = {report['model_b']}", ""]
    for t, r in report["tasks"].items():
        agree = r.get("prediction_agreement")
        lines.append(f"{t} ({r['output_type']}, {r['n_docs']} docs): predictions agree on "
                     f"{'-' if agree is None else f'{agree:.1%}'}")
        if "loglikelihood" in r:
            x = r["loglikelihood"]
            lines.append(f"  loglikelihood: {x['n']} requests, |A-B| max {x['max_abs_diff']:.2e}, mean "
                         f"{x['mean_abs_diff']:.2e}, p99 {x['p99_abs_diff']:.2e}; "
                         f"is_greedy agree {x['is_greedy_agreement']:.1%}")
        if "loglikelihood_rolling" in r:
            x = r["loglikelihood_rolling"]
            lines.append(f"  rolling loglikelihood: {x['n']} texts, |A-B| max {x['max_abs_diff']:.2e}, "
                         f"mean {x['mean_abs_diff']:.2e}")
        if "greedy_generation" in r:
            x = r["greedy_generation"]
            lines.append(f"  greedy generation: identical for {x['identical']:.1%} of {x['n']} requests")
            for e in x["differences"]:
                lines.append(f"    doc {e['doc_id']}: differ from char {e['first_difference_at_char']}: "
                             f"A {e['a']!r} | B {e['b']!r}")
        for m, v in r["metrics"].items():
            pts = f" ({v['diff_points']:+.2f} points)" if v["diff_points"] is not None else ""
            lines.append(f"  {m}: A {v['a']:.4f}  B {v['b']:.4f}  B-A {v['diff']:+.4f}{pts}")
        for e in r["prediction_disagreements"]:
            extra = ""
            if "margin_a" in e:
                fmt = lambda m: "-" if m is None else f"{m:.3f}"  # noqa: E731
                extra = f" (best-vs-second logprob margin A {fmt(e['margin_a'])}, B {fmt(e['margin_b'])})"
            lines.append(f"    doc {e['doc_id']}: A {e['a']!r} B {e['b']!r} gold {e['target']!r}{extra}")
        lines.append("")
    return "\n".join(lines).rstrip()
