"""A suite's summary over a finished run: the leaderboard-v2 normalised scores (``evalkit.scoring.
leaderboard_v2``) built from the run's per-item rows of the tasks the suite names as its benchmarks.

A row gives its subtask (lm-eval's leaf, ``extra.lm_eval.task``; a native task's
``extra.subtask``; otherwise the task itself), its metric values (the row's ``metrics``, else
lm-eval's raw ``extra.lm_eval.values``, else the row's ``extra``: IFEval's instruction-level list) and its number of choices
(lm-eval's multiple-choice continuations, or a native task's one loglikelihood per option).
"""
from __future__ import annotations

from typing import Mapping

from evalkit.scoring import leaderboard_v2


def _value(row: dict, name: str):
    metrics = row.get("metrics") or {}
    for key in (name, *sorted(k for k in metrics if k.startswith(name + ","))):
        if key in metrics:
            return metrics[key]
    extra = row.get("extra") or {}
    raw = ((extra.get("lm_eval") or {}).get("values") or {})
    return raw.get(name, extra.get(name))


def bench_rows(kind: str, task: str, rows) -> leaderboard_v2.Bench:
    names = ("prompt_level_strict_acc", "inst_level_strict_acc") if kind == "ifeval" else (
        leaderboard_v2.RULES[kind][0],)
    bench = leaderboard_v2.Bench(kind)
    for row in rows:
        lm = (row.get("extra") or {}).get("lm_eval") or {}
        item = {}
        for name in names:
            v = _value(row, name)
            if v is None:
                raise ValueError(f"suite summary: task {task} row {row.get('doc_id')!r} has no {name!r} (the "
                                 f"leaderboard-v2 {kind} score needs it)")
            item[name] = v
        if kind == "ifeval" and not isinstance(item["inst_level_strict_acc"], list):
            item["inst_level_strict_acc"] = [item["inst_level_strict_acc"]]
        conts = lm.get("continuations") if lm else row.get("responses")  # lm-eval's options, or one answer each
        item["n_choices"] = len(conts) if isinstance(conts, list) else 0
        subtask = lm.get("task") or (row.get("extra") or {}).get("subtask") or task
        bench.subtasks.setdefault(subtask, []).append(item)
    return bench


def summarize(suite: dict, samples: Mapping[str, list], seed: int = 1234, replicates: int = 1000) -> dict:
    """The record's ``suite`` entry from the suite's own entry (``Suite.to_record``: name, path,
    summary, tasks, benchmarks): with ``summary = "leaderboard-v2"`` its figures (percent, with CIs)
    and the benchmarks that did not run are added."""
    out = dict(suite)
    if suite.get("summary") != "leaderboard-v2":
        return out
    benches = {kind: bench_rows(kind, task, samples[task]) for task, kind in (suite.get("benchmarks") or {}).items()
               if samples.get(task)}
    out["leaderboard_v2"] = leaderboard_v2.summary(benches, replicates, seed)
    out["missing"] = [k for k in leaderboard_v2.KINDS if k not in benches]
    return out
