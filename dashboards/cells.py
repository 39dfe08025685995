"""Run records to frames, straight from their JSON (the index's summaries: no typed record is made
until a view needs one run): one row per run (``run_frame``) and one per run x task x metric
(``cell_frame``) with value, CI and n; arena records add one ``rating`` cell per rated model. Built
column by column (10,000 runs: a tenth of a second), no Streamlit."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from .labels import ARENA_TASK, col_key, entry_key, gen_text, task_family, weights_id

RUN_COLUMNS = ["run_id", "folder", "path", "kind", "model", "spec", "backend", "identity_hash", "gen", "entry",
               "weights", "setting_entry", "settings", "created_at", "date", "tags", "tasks", "evalkit_version",
               "git_sha", "judge", "limit", "seed", "series", "step"]
CELL_COLUMNS = ["run_id", "entry", "label", "setting_entry", "setting_label", "settings", "model", "backend",
                "created_at", "tags", "task", "family", "version", "prompt_hash", "n_docs", "col", "metric",
                "metric_order", "value", "ci_low", "ci_high", "stderr", "n", "kind", "higher_is_better", "series",
                "step"]
#: a cell's fields of its own; the others (``RUN_PART``) are its run's, taken from the runs frame
_OWN = ["task", "version", "prompt_hash", "n_docs", "col", "metric", "metric_order", "value", "ci_low", "ci_high",
        "stderr", "n", "kind", "higher_is_better"]
RUN_PART = ["run_id", "entry", "setting_entry", "settings", "model", "backend", "created_at", "tags", "series",
            "step"]


def finite(x) -> Optional[float]:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def timestamps(texts: Sequence) -> pd.Series:
    """ISO timestamps as UTC times (naive ones taken as UTC), NaT where unreadable; one parse for all."""
    raw = pd.Series(list(texts), dtype=object)
    out = pd.to_datetime(raw, errors="coerce", utc=True, format="ISO8601")
    odd = out.isna() & raw.notna()
    if odd.any():                 # what ISO 8601 refuses, one by one (pandas' own guess)
        out[odd] = [_one_time(t) for t in raw[odd]]
    return out


def _one_time(text) -> pd.Timestamp:
    try:
        t = pd.Timestamp(text)
        return t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC")
    except (TypeError, ValueError):
        return pd.NaT


def series_of(cfg: dict) -> dict:
    """The training run and step of a checkpoint's record (``--series NAME --step N``), else None."""
    s = cfg.get("series")
    ok = isinstance(s, dict) and s.get("name") and isinstance(s.get("step"), int)
    return {"series": str(s["name"]) if ok else None, "step": s["step"] if ok else None}


def _run_row(path: Path, run: dict) -> dict:
    m, cfg = run.get("model") or {}, run.get("config") or {}
    tasks = run.get("tasks") or {}
    kind = "arena" if m.get("backend") == "arena" or set(tasks) == {ARENA_TASK} else "static"
    gen = cfg.get("gen_overrides") or {}
    name, backend, ident = str(m.get("name") or m.get("spec") or "?"), m.get("backend"), m.get("identity_hash")
    weights, gen_shown = weights_id(m), gen_text(gen)
    return {"run_id": run["run_id"], "folder": path.name, "path": str(path), "kind": kind, "model": name,
            "spec": m.get("spec") or None, "backend": str(backend or "?"), "identity_hash": ident or "",
            "gen": gen_shown, "entry": entry_key(name, weights), "weights": weights,
            "setting_entry": entry_key(name, ident or "", gen), "settings": f"{backend or '?'}: {gen_shown}",
            "created_at": run.get("created_at"), "tags": tuple(str(t) for t in cfg.get("tags") or ()),
            "tasks": tuple(tasks), "evalkit_version": (run.get("versions") or {}).get("evalkit"),
            "git_sha": run.get("git_sha"), "judge": (run.get("judge") or {}).get("name"), "limit": cfg.get("limit"),
            "seed": cfg.get("seed"), **series_of(cfg)}


def run_frame(items: Sequence[tuple[Path, dict]]) -> pd.DataFrame:
    """One row per ``(folder, run.json dict)``, in the given order."""
    runs = pd.DataFrame([_run_row(path, run) for path, run in items], columns=RUN_COLUMNS)
    runs["created_at"] = timestamps(runs["created_at"]).to_numpy() if len(runs) else pd.Series(dtype=object)
    runs["date"] = runs["created_at"].dt.date if len(runs) else None
    return runs


def _metric_row(task: str, t: dict, col: str, i: int, metric: str, mv) -> tuple:
    mv = mv if isinstance(mv, dict) else {"value": mv}
    return (task, str(t.get("version", "1")), t.get("prompt_hash", ""), t.get("n_docs", 0), col, metric, i,
            finite(mv.get("value")), finite(mv.get("ci_low")), finite(mv.get("ci_high")), finite(mv.get("stderr")),
            mv.get("n", 0), mv.get("kind", "mean"), mv.get("higher_is_better", True))


def _static_rows(run: dict) -> list[tuple]:
    out = []
    for task, t in (run.get("tasks") or {}).items():
        col = col_key(task, t.get("version", "1"), t.get("prompt_hash", ""))
        out.extend(_metric_row(task, t, col, i, metric, mv)
                   for i, (metric, mv) in enumerate((t.get("metrics") or {}).items()))
    return out


def _arena_rows(run: dict) -> list[tuple]:
    """A rated model's cells, its name in the model field (``cell_frame`` finds its row)."""
    out = []
    for task, t in (run.get("tasks") or {}).items():
        method = (t.get("config") or {}).get("method", "bt")
        col = col_key(task, t.get("version", "1"), t.get("prompt_hash", ""))
        for model, r in (t.get("ratings") or {}).items():
            if isinstance(r, dict):
                out.append((model, (task, str(t.get("version", "1")), t.get("prompt_hash", ""), t.get("n_docs", 0),
                                    col, f"rating ({method})", 0, finite(r.get("rating")), finite(r.get("ci_low")),
                                    finite(r.get("ci_high")), None, r.get("n_battles"), "rating", True)))
    return out


def cell_frame(items: Sequence[tuple[Path, dict]], runs: pd.DataFrame, labels: dict,
               setting_labels: dict) -> pd.DataFrame:
    """One row per run x task x metric (``items`` and ``runs`` in the same order). A model rated in an
    arena joins the static row of the same name when exactly one exists, else gets its own row."""
    own, at, arena = [], [], []
    for pos, ((_, run), kind) in enumerate(zip(items, runs["kind"])):
        if kind == "arena":
            arena.extend((pos, model, row) for model, row in _arena_rows(run))
            continue
        rows = _static_rows(run)
        own.extend(rows)
        at.extend([pos] * len(rows))
    cells = pd.DataFrame(own, columns=_OWN)
    for col in RUN_PART:
        cells[col] = runs[col].to_numpy()[np.asarray(at, dtype=int)]
    cells["label"] = cells["entry"].map(labels)
    cells["setting_label"] = cells["setting_entry"].map(setting_labels)
    if arena:
        static = runs[runs["kind"] != "arena"]
        by_name = static.groupby("model")["entry"].unique().to_dict() if len(static) else {}
        cells = pd.concat([cells, _arena_frame(arena, runs, by_name, labels)], ignore_index=True)
    cells["family"] = cells["task"].map({t: task_family(t) for t in cells["task"].unique()})
    return cells[CELL_COLUMNS]


def _arena_frame(arena: list, runs: pd.DataFrame, by_name: dict, labels: dict) -> pd.DataFrame:
    frame = pd.DataFrame([row for _, _, row in arena], columns=_OWN)
    pos = np.asarray([p for p, _, _ in arena], dtype=int)
    for col in ("run_id", "created_at", "tags"):
        frame[col] = runs[col].to_numpy()[pos]
    entries = []
    for _, model, _ in arena:
        found = list(by_name.get(model, ()))
        entries.append(found[0] if len(found) == 1 else entry_key(model, "", {"arena": True}))
    frame["entry"] = frame["setting_entry"] = entries
    frame["model"] = [m for _, m, _ in arena]
    frame["label"] = frame["setting_label"] = [labels.get(e, m) for e, m in zip(entries, frame["model"])]
    frame["settings"], frame["backend"], frame["series"], frame["step"] = "arena", "arena", None, None
    return frame
