"""Load two run records and pair their samples item by item.

Samples are matched on (doc id, occurrence): the k-th row of a doc id in the baseline pairs with
the k-th row of that id in the candidate (repeats and multi-turn rows keep their order). A pair is
only meaningful when both rows describe the same item under the same prompt, so we check:

- data: the same doc ids on both sides with the same ``doc_hash`` (the doc's content). Otherwise
  the comparison is refused unless ``allow_data_change``; then only the docs present on both sides
  with equal hashes are compared and the report says how many were dropped.
- prompts: the same ``prompt_hash`` per pair and the same task version. Otherwise refused unless
  ``allow_prompt_change`` (comparing two prompt templates is legitimate, but it must be asked for).

Rows belong to *clusters* (items) for the statistics: ``extra["cluster"]`` or ``extra["item_id"]``
when a task sets one, else the doc id, so repeated samples of one question count as one item.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Optional

import numpy as np

from evalkit.records import RunRecord, TaskEntry, load_run


class NotComparable(ValueError):
    """The two runs cannot be compared as asked (the CLI exits with code 2)."""


@dataclass
class MetricInfo:
    name: str
    kind: str               # "mean" or "corpus"
    higher_is_better: bool
    baseline_value: Optional[float]
    candidate_value: Optional[float]


@dataclass
class AlignedTask:
    """The paired rows of one task, in baseline order."""

    name: str
    base_rows: list
    cand_rows: list
    clusters: np.ndarray          # integer cluster code per pair
    metrics: dict                 # name -> MetricInfo, in the baseline's order
    notes: list = field(default_factory=list)
    n_baseline: int = 0
    n_candidate: int = 0
    options: dict = field(default_factory=dict)   # the baseline's task options (to rebuild the task)

    def values(self, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-pair values of a mean metric (pairs where either side lacks it are dropped)."""
        b = [r.get("metrics", {}).get(metric) for r in self.base_rows]
        c = [r.get("metrics", {}).get(metric) for r in self.cand_rows]
        keep = np.array([_finite(x) and _finite(y) for x, y in zip(b, c)], dtype=bool)
        bv = np.array([float(x) if x is not None else np.nan for x in b])[keep] if keep.size else np.zeros(0)
        cv = np.array([float(x) if x is not None else np.nan for x in c])[keep] if keep.size else np.zeros(0)
        return bv, cv, self.clusters[keep] if keep.size else np.zeros(0, dtype=int)


def _finite(x) -> bool:
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def _keyed(rows: Iterable[dict]) -> dict:
    out, seen = {}, {}
    for r in rows:
        doc = str(r.get("doc_id"))
        k = seen.get(doc, 0)
        seen[doc] = k + 1
        out[(doc, k)] = r
    return out


def cluster_of(row: dict) -> str:
    extra = row.get("extra") or {}
    if isinstance(extra, dict):
        for key in ("cluster", "item_id"):
            if extra.get(key) is not None:
                return str(extra[key])
    return str(row.get("doc_id"))


def _metric_infos(base_task: TaskEntry, cand_task: TaskEntry) -> dict:
    out = {}
    for name, m in base_task.metrics.items():
        c = cand_task.metrics.get(name)
        if c is not None:
            out[name] = MetricInfo(name, m.kind, m.higher_is_better, m["value"], c["value"])  # null stays None
    return out


def align_task(base: RunRecord, cand: RunRecord, task: str, allow_prompt_change: bool = False,
               allow_data_change: bool = False) -> AlignedTask:
    bt, ct = base.run.tasks[task], cand.run.tasks[task]
    notes = []
    if str(bt.version) != str(ct.version):
        msg = f"task {task}: version differs (baseline {bt.version}, candidate {ct.version})"
        if not allow_prompt_change:
            raise NotComparable(msg + "; pass --allow-prompt-change to compare anyway")
        notes.append(msg)
    b_rows, c_rows = _keyed(base.samples(task)), _keyed(cand.samples(task))
    only_b = [k for k in b_rows if k not in c_rows]
    only_c = [k for k in c_rows if k not in b_rows]
    changed = [k for k in b_rows if k in c_rows and b_rows[k].get("doc_hash") != c_rows[k].get("doc_hash")]
    if only_b or only_c or changed:
        msg = (f"task {task}: the runs evaluated different data ({len(only_b)} docs only in the baseline, "
               f"{len(only_c)} only in the candidate, {len(changed)} with different content; "
               f"baseline limit {base.run.config.get('limit')}, candidate limit {cand.run.config.get('limit')})")
        if not allow_data_change:
            raise NotComparable(msg + "; pass --allow-data-change to compare the common docs only")
        notes.append(msg + "; comparing the common docs only")
    changed_set = set(changed)
    keys = [k for k in b_rows if k in c_rows and k not in changed_set]
    if not keys:
        raise NotComparable(f"task {task}: no docs in common between the two runs")
    prompt_diff = sum(1 for k in keys if b_rows[k].get("prompt_hash") != c_rows[k].get("prompt_hash"))
    if prompt_diff:
        msg = f"task {task}: {prompt_diff} of {len(keys)} prompts differ between the runs"
        if not allow_prompt_change:
            raise NotComparable(msg + " (different few-shot, template or system prompt?); "
                                "pass --allow-prompt-change to compare anyway")
        notes.append(msg)
    base_rows = [b_rows[k] for k in keys]
    cand_rows = [c_rows[k] for k in keys]
    _, clusters = np.unique([cluster_of(r) for r in base_rows], return_inverse=True)
    return AlignedTask(task, base_rows, cand_rows, clusters.astype(int), _metric_infos(bt, ct), notes,
                       len(b_rows), len(c_rows), dict((bt.config or {}).get("options") or {}))


def align_runs(base: RunRecord, cand: RunRecord, tasks: Optional[list] = None, allow_prompt_change: bool = False,
               allow_data_change: bool = False) -> list[AlignedTask]:
    """Pair every task of the baseline (or ``tasks``) with the candidate's rows for it."""
    names = list(tasks) if tasks else list(base.tasks)
    missing_b = [t for t in names if t not in base.tasks]
    if missing_b:
        raise NotComparable(f"the baseline run {base.path} has no task {', '.join(missing_b)}")
    missing_c = [t for t in names if t not in cand.tasks]
    if missing_c:
        raise NotComparable(f"the candidate run {cand.path} has no task {', '.join(missing_c)} "
                            f"(use --tasks to compare a subset)")
    return [align_task(base, cand, t, allow_prompt_change, allow_data_change) for t in names]


def load(path) -> RunRecord:
    try:
        return load_run(path)
    except FileNotFoundError as e:
        raise NotComparable(str(e)) from None
