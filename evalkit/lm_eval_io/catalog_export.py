"""Records of lm-eval's own tasks (``--tasks lm-eval:NAME``) in lm-eval's layout, under lm-eval's
names: a leaf task's results as ``results[<task>]``; a group's as ``results[<group>]`` plus one
entry per leaf and aggregating subgroup (from the record's breakdowns) and ``group_subtasks``.
Sample lines are the ones lm-eval's evaluator logs: the doc, its ``resps`` and per-filter
``filtered_resps`` exactly as lm-eval's filters left them, the metric values, lm-eval's
``doc_hash``/``prompt_hash``/``target_hash``."""
from __future__ import annotations

import hashlib
import json
import math

from evalkit.records import RunRecord, TaskEntry


def is_catalog(entry: TaskEntry) -> bool:
    return "leaves" in (entry.extra.get("lm_eval") or {})


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _figures(values: dict, names: dict, alias: str) -> tuple[dict, dict]:
    """(results entry, higher_is_better) of one task or group from {evalkit name: MetricValue dict}."""
    r, hib = {"alias": alias}, {}
    for name, mv in values.items():
        m, f = names.get(name, (name, "none"))
        v = mv.get("value")
        r[f"{m},{f}"] = v if v is not None and math.isfinite(v) else None
        r[f"{m}_stderr,{f}"] = mv.get("stderr") if mv.get("stderr") is not None else "N/A"
        hib[m] = mv.get("higher_is_better", True)
    return r, hib


def results(entry: TaskEntry) -> tuple[dict, dict, dict]:
    """({lm-eval name: results entry}, {name: higher_is_better}, group_subtasks) of one record entry."""
    lm = entry.extra["lm_eval"]
    names = {k: tuple(v) for k, v in (lm.get("metric_names") or {}).items()}
    out, hib = {}, {}
    top = {k: dict(v) for k, v in entry.metrics.items()}
    out[lm["task"]], hib[lm["task"]] = _figures(top, names, lm["task"])
    subtasks = {}
    if lm.get("kind") == "group":
        for sub, figs in (entry.breakdowns or {}).items():
            out[sub], hib[sub] = _figures({k: dict(v) for k, v in figs.items()}, names, sub)
        subtasks[lm["task"]] = [t for t in lm.get("leaves", [])]
    return out, hib, subtasks


def _arguments(row: dict, lm: dict) -> dict:
    ctx = row.get("prompt")
    ctx = ctx if isinstance(ctx, str) else json.dumps(ctx, ensure_ascii=False)
    conts = lm.get("continuations") or []
    if conts:
        return {f"gen_args_{k}": {"arg_0": ctx, "arg_1": c} for k, c in enumerate(conts)}
    return {"gen_args_0": {"arg_0": ctx, "arg_1": lm.get("gen_kwargs") or {}}}


def sample_lines(rec: RunRecord, task: str) -> dict[str, list]:
    """{lm-eval leaf task: its sample lines} of one record entry."""
    entry = rec.tasks[task]
    names = {k: tuple(v) for k, v in (entry.extra["lm_eval"].get("metric_names") or {}).items()}
    out: dict[str, list] = {}
    for row in rec.samples(task):
        lm = row["extra"]["lm_eval"]
        target = row.get("target")
        for f, filtered in (lm.get("filtered_resps") or {}).items():
            values = {}
            for name, (m, ff) in names.items():
                if ff != f:
                    continue
                if name in (row.get("metrics") or {}):
                    values[m] = row["metrics"][name]
                elif name in (lm.get("values") or {}):
                    values[m] = lm["values"][name]
            out.setdefault(lm["task"], []).append({
                "doc_id": lm["doc_id"], "doc": lm["doc"], "target": target, "arguments": _arguments(row, lm),
                "resps": row.get("responses"), "filtered_resps": filtered, "filter": f, "metrics": list(values),
                "doc_hash": _sha(json.dumps(lm["doc"], indent=2, ensure_ascii=False)),
                "prompt_hash": lm.get("prompt_hash"), "target_hash": _sha(str(target)), **values,
                "evalkit": {"task": task, "doc_id": row.get("doc_id"), "doc_hash": row.get("doc_hash")}})
    return out
