"""The judge beside every judged score: for each row of a task page (a run and a task), the judge
model that scored it and its reliability figures, from the record (the run's ``judge`` and the task's
``extra.judge``, written by ``evalkit.taskapi.judged.reliability``): parse failures (the share of
judge replies with no verdict) and, for pairwise metrics, position-swap consistency (the share of
games whose two orders agreed), and with a second judge how often the two agreed. Empty for tasks without judged metrics. Reads records only."""
from __future__ import annotations

from typing import Optional

import pandas as pd

COLUMNS = ("judge", "judge asks", "judge parse failures", "swap consistency", "judges agree")


def judge_name(record) -> Optional[str]:
    j = (getattr(record, "data", None) or {}).get("judge") or {}
    return j.get("name") or j.get("spec")


def reliability_of(record, task: str, metric: Optional[str] = None) -> Optional[dict]:
    """The judged metric's figures in the task's entry: ``metric``'s own when it is judged by name
    (``arena_hard`` for ``arena_hard_hard_prompt``: the longest judged name it starts with), else the
    task's only judged metric, else their sums."""
    entry = record.tasks.get(task) or {}
    figs = ((entry.get("extra") or {}).get("judge")) or {}
    # (MT-Bench's record keeps the judge's settings beside its figures: only the figures count)
    figs = {k: v for k, v in figs.items() if isinstance(v, dict) and "parse_failures" in v}
    if not figs:
        return None
    named = sorted((n for n in figs if metric and metric.startswith(n)), key=len)
    if named:
        return figs[named[-1]]
    if len(figs) == 1:
        return next(iter(figs.values()))
    asks = sum(f.get("asks") or 0 for f in figs.values())
    failed = sum(f.get("parse_failures") or 0 for f in figs.values())
    return {"asks": asks, "parse_failures": failed, "parse_failure_rate": failed / asks if asks else None}


def judge_columns(store, sel: pd.DataFrame, metric: Optional[str] = None) -> pd.DataFrame:
    """Columns beside ``sel``'s rows (``run_id``, ``task``): the judge, its asks, parse-failure share and
    swap consistency; no columns when no row's task was judged."""
    out = {c: [] for c in COLUMNS}
    for run_id, task in zip(sel["run_id"], sel["task"]):
        try:
            rec = store.record(run_id)
        except KeyError:
            rec = None
        fig = reliability_of(rec, task, metric) if rec is not None else None
        out["judge"].append(judge_name(rec) if fig else None)
        out["judge asks"].append((fig or {}).get("asks"))
        out["judge parse failures"].append((fig or {}).get("parse_failure_rate"))
        out["swap consistency"].append((fig or {}).get("swap_consistency"))
        out["judges agree"].append((fig or {}).get("agreement"))
    frame = pd.DataFrame(out, index=sel.index)
    keep = [c for c in COLUMNS if frame[c].notna().any()]
    return frame[keep]
