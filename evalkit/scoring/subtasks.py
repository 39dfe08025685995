"""Figures over a task's subtasks: each sample names its subtask in ``extra["subtask"]``.

``macro_group(names)``: ``<m>_macro``, the unweighted mean over subtasks of the subtask means, with
a stratified interval (``evalkit.scoring.choices.macro_mean``); ``breakdowns(samples, direction)``:
``{"subtask:<name>": {metric: MetricValue}}``, each subtask's means with their CIs.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Callable

from evalkit.scoring.choices import macro_mean
from evalkit.scoring.metric import MetricGroup
from evalkit.scoring.stats import mean_metric


def by_subtask(samples, metric: str) -> dict:
    groups = defaultdict(list)
    for s in samples:
        groups[s.extra["subtask"]].append(s.metrics[metric])
    return dict(groups)


def macro_group(names: tuple) -> MetricGroup:
    """``<m>_macro`` for each of ``names``: the unweighted mean over subtasks of the subtask means."""
    def estimate(samples):
        return {f"{m}_macro": macro_mean(by_subtask(samples, m)) for m in names} if samples else {}
    return MetricGroup("macro", tuple(f"{m}_macro" for m in names), True, estimate=estimate)


def breakdowns(samples, higher_is_better: Callable[[str], bool]) -> dict:
    names = list(samples[0].metrics) if samples else []
    groups = defaultdict(list)
    for s in samples:
        groups[s.extra["subtask"]].append(s)
    return {f"subtask:{t}": {m: mean_metric([s.metrics[m] for s in groups[t]], higher_is_better(m)) for m in names}
            for t in sorted(groups)}
