"""BFCL's leaderboard summaries over the single-turn categories, each with a 95% interval.

As BFCL's ``generate_leaderboard_csv`` (eval_checker/eval_runner_helper.py) computes them:

* ``non_live_ast``: the unweighted mean of simple (itself the unweighted mean of simple_python,
  simple_java and simple_javascript), multiple, parallel and parallel_multiple: weights 1/12, 1/12,
  1/12, 1/4, 1/4, 1/4. Irrelevance is not part of it.
* ``live_ast``: live_simple, live_multiple, live_parallel and live_parallel_multiple weighted by
  their sizes, i.e. the accuracy over all their items.
* ``irrelevance_detection``: the unweighted mean of irrelevance and live_irrelevance.
* ``relevance_detection``: live_relevance.
* ``multi_turn``: the unweighted mean of multi_turn_base, miss_func, miss_param and long_context.

BFCL's overall score weights non-live 10, live 10, irrelevance 10, multi-turn 30 and agentic 40
(web search, memory); the agentic categories are not evaluated here, so no overall score is
reported as a metric. ``overall_with_missing_as_zero`` (in the task's extra figures) is what BFCL's own table
prints when only these categories ran: it counts the missing ones as 0, a lower bound.

Intervals: a weighted sum of independent category accuracies has variance ``sum w_c^2 var_c``,
with ``var_c`` Agresti-Coull's ``p~(1-p~)/(n_c+4)`` (as ``evalkit.scoring.choices.macro_mean``), and
a normal interval clipped to [0, 1]. A summary whose categories did not all run is not reported.
"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Mapping, Sequence

from evalkit.scoring.stats import Z95, MetricValue, mean_metric

SIMPLE = ("simple_python", "simple_java", "simple_javascript")
NON_LIVE_WEIGHTS = {**{c: 1 / 12 for c in SIMPLE}, "multiple": 0.25, "parallel": 0.25, "parallel_multiple": 0.25}
LIVE_AST = ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")
IRRELEVANCE_WEIGHTS = {"irrelevance": 0.5, "live_irrelevance": 0.5}
MULTI_TURN_WEIGHTS = {c: 0.25 for c in ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param",
                                        "multi_turn_long_context")}
SUMMARIES = ("non_live_ast", "live_ast", "irrelevance_detection", "relevance_detection")
#: BFCL's overall weights (calculate_percentage_weighted_accuracy in generate_leaderboard_csv)
OVERALL_WEIGHTS = {"non_live_ast": 10, "live_ast": 10, "irrelevance_detection": 10, "multi_turn": 30, "agentic": 40}


def by_category(samples: Sequence) -> dict[str, list[float]]:
    out = defaultdict(list)
    for s in samples:
        out[s.extra["category"]].append(float(s.metrics["accuracy"]))
    return dict(out)


def weighted_mean(groups: Mapping[str, Sequence[float]], weights: Mapping[str, float]) -> MetricValue:
    """``sum_c w_c * mean_c`` over categories (all of ``weights`` must be in ``groups``)."""
    value, var, n = 0.0, 0.0, 0
    for c, w in weights.items():
        x = groups[c]
        k, m = len(x), sum(x) / len(x)
        pt = (sum(x) + 2) / (k + 4)
        value += w * m
        var += w * w * pt * (1 - pt) / (k + 4)
        n += k
    se = math.sqrt(var)
    return MetricValue(value, se, max(0.0, value - Z95 * se), min(1.0, value + Z95 * se), n, "weighted", True)


def summaries(samples: Sequence) -> dict[str, MetricValue]:
    """The summaries whose categories are all among the samples."""
    groups = by_category(samples)
    out = {}
    if all(c in groups for c in NON_LIVE_WEIGHTS):
        out["non_live_ast"] = weighted_mean(groups, NON_LIVE_WEIGHTS)
    if all(c in groups for c in LIVE_AST):
        out["live_ast"] = mean_metric([v for c in LIVE_AST for v in groups[c]])
    if all(c in groups for c in IRRELEVANCE_WEIGHTS):
        out["irrelevance_detection"] = weighted_mean(groups, IRRELEVANCE_WEIGHTS)
    if "live_relevance" in groups:
        out["relevance_detection"] = mean_metric(groups["live_relevance"])
    if all(c in groups for c in MULTI_TURN_WEIGHTS):
        out["multi_turn"] = weighted_mean(groups, MULTI_TURN_WEIGHTS)
    return out


def overall_with_missing_as_zero(summary: Mapping[str, MetricValue]) -> dict:
    """BFCL's overall formula with what was not evaluated counted as 0 (what its table prints)."""
    total = sum(OVERALL_WEIGHTS.values())
    value = sum(w * summary[k].value for k, w in OVERALL_WEIGHTS.items() if k in summary) / total
    return {"value": value, "weights": dict(OVERALL_WEIGHTS),
            "missing": sorted(k for k in OVERALL_WEIGHTS if k not in summary),
            "note": "BFCL counts categories it did not evaluate as 0: a lower bound of the overall score"}
