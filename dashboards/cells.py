"""Run records to rows: one row per run (``run_row``) and one per run x task x metric (``cells_of``),
with value, CI and n; arena records add one ``rating`` cell per rated model (no Streamlit)."""
from __future__ import annotations

import math
from typing import Optional

import pandas as pd

from evalkit.records import RunRecord

from .labels import ARENA_TASK, col_key, entry_key, gen_text, task_family, weights_id

RUN_COLUMNS = ["run_id", "folder", "path", "kind", "model", "spec", "backend", "identity_hash", "gen", "entry",
               "weights", "setting_entry", "settings", "created_at", "date", "tags", "tasks", "evalkit_version",
               "git_sha", "judge", "limit", "seed", "series", "step"]
CELL_COLUMNS = ["run_id", "entry", "label", "setting_entry", "setting_label", "settings", "model", "backend",
                "created_at", "tags", "task", "family", "version", "prompt_hash", "n_docs", "col", "metric",
                "metric_order", "value", "ci_low", "ci_high", "stderr", "n", "kind", "higher_is_better", "series",
                "step"]


def finite(x) -> Optional[float]:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def timestamp(text) -> pd.Timestamp:
    try:
        t = pd.Timestamp(text)
        return t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC")
    except (TypeError, ValueError):
        return pd.NaT


def run_row(rec: RunRecord) -> dict:
    run, m = rec.run, rec.run.model
    cfg = run.config or {}
    kind = "arena" if m.backend == "arena" or (set(run.tasks) == {ARENA_TASK}) else "static"
    created = timestamp(run.created_at)
    gen = cfg.get("gen_overrides") or {}
    name = str(m.name or m.spec or "?")
    weights = weights_id(m)
    return {"run_id": rec.run_id, "folder": rec.path.name, "path": str(rec.path), "kind": kind,
            "model": name, "spec": m.spec or None, "backend": str(m.backend or "?"),
            "identity_hash": m.identity_hash or "", "gen": gen_text(gen),
            "entry": entry_key(name, weights), "weights": weights,
            "setting_entry": entry_key(name, m.identity_hash or "", gen),
            "settings": f"{m.backend or '?'}: {gen_text(gen)}",
            "created_at": created, "date": created.date() if not pd.isna(created) else None,
            "tags": tuple(str(t) for t in cfg.get("tags") or ()), "tasks": tuple(run.tasks),
            "evalkit_version": (run.versions or {}).get("evalkit"), "git_sha": run.git_sha,
            "judge": (run.judge or {}).get("name"), "limit": cfg.get("limit"), "seed": cfg.get("seed"),
            **series_of(cfg)}


def series_of(cfg: dict) -> dict:
    """The training run and step of a checkpoint's record (``--series NAME --step N``), else None."""
    s = cfg.get("series")
    ok = isinstance(s, dict) and s.get("name") and isinstance(s.get("step"), int)
    return {"series": str(s["name"]) if ok else None, "step": s["step"] if ok else None}


def static_cells(rec: RunRecord, row: dict, label: str, setting_label: str) -> list[dict]:
    out = []
    for task, t in rec.run.tasks.items():
        base = {"run_id": row["run_id"], "entry": row["entry"], "label": label,
                "setting_entry": row["setting_entry"], "setting_label": setting_label,
                "settings": row["settings"], "model": row["model"],
                "backend": row["backend"], "created_at": row["created_at"], "tags": row["tags"], "task": task,
                "family": task_family(task), "version": str(t.version), "prompt_hash": t.prompt_hash,
                "n_docs": t.n_docs, "col": col_key(task, t.version, t.prompt_hash),
                "series": row.get("series"), "step": row.get("step")}
        for i, (metric, mv) in enumerate(t.metrics.items()):
            out.append({**base, "metric": metric, "metric_order": i, "value": finite(mv.value),
                        "ci_low": finite(mv.ci_low), "ci_high": finite(mv.ci_high), "stderr": finite(mv.stderr),
                        "n": mv.n, "kind": mv.kind, "higher_is_better": mv.higher_is_better})
    return out


def arena_cells(rec: RunRecord, row: dict, by_name: dict, labels: dict) -> list[dict]:
    """A rated model joins the static row of the same name when exactly one exists, else its own row."""
    out = []
    for task, t in rec.tasks.items():
        ratings = t.ratings or {}
        method = t.config.get("method", "bt")
        for model, r in ratings.items():
            if not isinstance(r, dict):
                continue
            entries = list(by_name.get(model, ()))
            entry = entries[0] if len(entries) == 1 else entry_key(model, "", {"arena": True})
            label = labels.get(entry, model)
            out.append({"run_id": row["run_id"], "entry": entry, "label": label, "setting_entry": entry,
                        "setting_label": label, "settings": "arena", "model": model,
                        "backend": "arena", "created_at": row["created_at"], "tags": row["tags"], "task": task,
                        "family": "arena", "version": str(t.version), "prompt_hash": t.prompt_hash,
                        "n_docs": t.n_docs, "col": col_key(task, t.version, t.prompt_hash),
                        "metric": f"rating ({method})", "metric_order": 0, "value": finite(r.get("rating")),
                        "ci_low": finite(r.get("ci_low")), "ci_high": finite(r.get("ci_high")), "stderr": None,
                        "n": r.get("n_battles"), "kind": "rating", "higher_is_better": True,
                        "series": None, "step": None})
    return out
