"""Run records as pandas frames, read lazily and cached (no Streamlit here: notebooks can use it).

``ResultsStore(results_dir)`` keeps one parsed ``run.json`` per run folder. ``refresh()`` lists the
folder and re-reads only the ``run.json`` files whose size or mtime changed, so a rerun of the
dashboard costs a directory listing; samples (the big ``samples_<task>.jsonl`` files) are read
only when a view asks for one (run, task), and the last few are kept in memory.

Frames:

- ``runs()``: one row per run (model, backend, date, tags, versions, the row it fills).
- ``cells()``: one row per run x task x metric with value, CI and n; arena records add one
  ``rating`` cell per rated model. Each cell names its *row* (``entry``: the model's name,
  identity hash and generation overrides, so two settings of one model are two rows) and its
  *column* (``col``: task, task version and prompt hash, so runs whose prompts differ never share a
  column).
- ``samples(run_id, task)``: one row per sample, display-ready (GPQA-like tasks are redacted here,
  before anything reaches a page).
"""
from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

import pandas as pd

from evalkit.records import RunRecord, load_run

HIDDEN = "(hidden for this task)"
SAMPLE_CACHE_SIZE = 8
ARENA_TASK = "arena"

# Task family by name prefix; a task class can set ``family`` itself.
FAMILIES = {"gsm8k": "math", "math": "math", "math500": "math", "hendrycks": "math", "mmlu": "knowledge",
            "gpqa": "knowledge", "humaneval": "code", "mbpp": "code", "translation": "translation",
            "wmt": "translation", "xsum": "summarization", "cnn": "summarization",
            "summarization": "summarization", "wikitext": "language modeling", "mt_bench": "chat (judged)",
            ARENA_TASK: "arena"}


def task_family(task: str) -> str:
    try:
        from evalkit import registry
        fam = getattr(registry.all_tasks().get(task), "family", None)
        if isinstance(fam, str) and fam:
            return fam
    except Exception:  # noqa: BLE001 - an unknown or broken task file only loses its family
        pass
    name = task.lower()
    for prefix in sorted(FAMILIES, key=len, reverse=True):
        if name.startswith(prefix):
            return FAMILIES[prefix]
    return "other"


def gen_text(gen: Optional[dict]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted((gen or {}).items())) or "default generation"


def entry_key(name: str, identity_hash: str = "", gen: Optional[dict] = None) -> str:
    """The row a run fills: same name, same weights/backend identity and same generation overrides."""
    return json.dumps([name, identity_hash or "", json.dumps(gen or {}, sort_keys=True)])


def col_key(task: str, version, prompt_hash) -> str:
    return f"{task}|v{version}|{prompt_hash or ''}"


def is_redacted(task: str) -> bool:
    from evalkit.compare.analysis import redacted
    return redacted(task)


def as_text(x) -> str:
    """Prompts, responses and targets as readable text (chat messages and turns on their own lines)."""
    if x is None:
        return ""
    if isinstance(x, str):
        return x
    if isinstance(x, list):
        if x and all(isinstance(m, dict) and "content" in m for m in x):
            return "\n\n".join(f"[{m.get('role', '?')}] {m.get('content')}" for m in x)
        if len(x) == 1:
            return as_text(x[0])
        return "\n\n".join(f"[{i + 1}] {as_text(v)}" for i, v in enumerate(x))
    if isinstance(x, dict):
        if "text" in x:
            return as_text(x["text"])
        return "; ".join(f"{k}: {as_text(v)}" for k, v in x.items())
    return str(x)


def _finite(x) -> Optional[float]:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _ts(text) -> pd.Timestamp:
    try:
        t = pd.Timestamp(text)
        return t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC")
    except (TypeError, ValueError):
        return pd.NaT


@dataclass
class _Loaded:
    sig: tuple
    record: RunRecord


class ResultsStore:
    """All run records under one results folder (plus optional battle files), read lazily."""

    def __init__(self, results_dir, battles: Iterable = (), rating_rounds: int = 100):
        self.results_dir = Path(results_dir)
        self.battle_files = [Path(b) for b in battles]
        self.rating_rounds = rating_rounds
        self._loaded: dict[str, _Loaded] = {}
        self._battle_records: dict[str, _Loaded] = {}
        self._frames: dict[str, pd.DataFrame] = {}
        self._samples: OrderedDict = OrderedDict()
        self.version = 0
        self.errors: dict[str, str] = {}
        self._lock = threading.RLock()   # one store serves every browser session (threads)

    # ---- summaries ------------------------------------------------------------------------------
    def refresh(self) -> bool:
        """Re-read changed ``run.json`` files; returns True when anything changed."""
        with self._lock:
            return self._refresh()

    def _refresh(self) -> bool:
        changed = False
        seen = set()
        if self.results_dir.is_dir():
            for child in sorted(self.results_dir.iterdir()):
                rj = child / "run.json"
                if child.name.startswith(".") or not rj.is_file():
                    continue
                try:
                    st = rj.stat()
                except OSError:
                    continue
                sig = (st.st_mtime_ns, st.st_size)
                seen.add(child.name)
                old = self._loaded.get(child.name)
                if old is not None and old.sig == sig:
                    continue
                try:
                    self._loaded[child.name] = _Loaded(sig, load_run(child))
                    self.errors.pop(child.name, None)
                except (ValueError, OSError) as e:
                    self.errors[child.name] = str(e)
                    self._loaded.pop(child.name, None)
                changed = True
        for gone in set(self._loaded) - seen:
            del self._loaded[gone]
            changed = True
        changed |= self._refresh_battles()
        if changed:
            self._frames.clear()
            self.version += 1
        return changed

    def _refresh_battles(self) -> bool:
        changed = False
        for path in self.battle_files:
            try:
                st = path.stat()
            except OSError as e:
                self.errors[str(path)] = str(e)
                continue
            sig = (st.st_mtime_ns, st.st_size)
            old = self._battle_records.get(str(path))
            if old is not None and old.sig == sig:
                continue
            try:
                self._battle_records[str(path)] = _Loaded(sig, battles_record(path, self.rating_rounds))
                self.errors.pop(str(path), None)
            except (ValueError, OSError) as e:
                self.errors[str(path)] = str(e)
            changed = True
        return changed

    def records(self) -> dict[str, RunRecord]:
        """run id -> record (run folders first, then battle files rated in memory)."""
        out = {}
        for item in list(self._loaded.values()) + list(self._battle_records.values()):
            out.setdefault(item.record.run_id, item.record)
        return out

    def record(self, run_id: str) -> RunRecord:
        recs = self.records()
        if run_id not in recs:
            raise KeyError(f"no run {run_id!r} in {self.results_dir}")
        return recs[run_id]

    def runs(self) -> pd.DataFrame:
        with self._lock:
            if "runs" not in self._frames:
                self._build()
            return self._frames["runs"]

    def cells(self) -> pd.DataFrame:
        with self._lock:
            if "cells" not in self._frames:
                self._build()
            return self._frames["cells"]

    def _build(self) -> None:
        recs = self.records()
        run_rows, cell_rows = [], []
        for rec in recs.values():
            run_rows.append(_run_row(rec))
        runs = pd.DataFrame(run_rows, columns=RUN_COLUMNS)
        static = runs[runs["kind"] != "arena"]
        labels = _labels(static)
        by_name = static.groupby("model")["entry"].unique().to_dict() if len(static) else {}
        for rec, row in zip(recs.values(), run_rows):
            if row["kind"] == "arena":
                cell_rows.extend(_arena_cells(rec, row, by_name, labels))
            else:
                cell_rows.extend(_static_cells(rec, row, labels[row["entry"]]))
        runs["label"] = [labels.get(e, m) for e, m in zip(runs["entry"], runs["model"])]
        cells = pd.DataFrame(cell_rows, columns=CELL_COLUMNS)
        cells = _label_columns(cells)
        if len(cells):
            cells = cells.sort_values("created_at", ascending=False, kind="stable")
            key = ["entry", "col", "metric"]
            cells["n_runs"] = cells.groupby(key)["run_id"].transform("count")
            cells["latest"] = ~cells.duplicated(key, keep="first")
        else:
            cells["n_runs"], cells["latest"] = pd.Series(dtype=int), pd.Series(dtype=bool)
        self._frames["runs"] = runs.sort_values("created_at", ascending=False, kind="stable").reset_index(drop=True)
        self._frames["cells"] = cells.reset_index(drop=True)

    # ---- samples --------------------------------------------------------------------------------
    def samples(self, run_id: str, task: str) -> pd.DataFrame:
        """One row per sample of ``task`` in ``run_id`` (read on first use, then cached)."""
        rec = self.record(run_id)
        entry = rec.tasks.get(task, {})
        path = rec.path / entry.get("samples_file", f"samples_{task}.jsonl")
        try:
            st = path.stat()
            sig = (st.st_mtime_ns, st.st_size)
        except OSError:
            return empty_samples()
        key = (run_id, task, sig)
        with self._lock:
            if key in self._samples:
                self._samples.move_to_end(key)
                return self._samples[key]
        frame = samples_frame(rec, task)
        with self._lock:
            self._samples[key] = frame
            while len(self._samples) > SAMPLE_CACHE_SIZE:
                self._samples.popitem(last=False)
        return frame


RUN_COLUMNS = ["run_id", "folder", "path", "kind", "model", "spec", "backend", "identity_hash", "gen", "entry",
               "created_at", "date", "tags", "tasks", "evalkit_version", "git_sha", "judge", "limit", "seed"]
CELL_COLUMNS = ["run_id", "entry", "label", "model", "backend", "created_at", "tags", "task", "family", "version",
                "prompt_hash", "n_docs", "col", "metric", "metric_order", "value", "ci_low", "ci_high", "stderr",
                "n", "kind", "higher_is_better"]


def _run_row(rec: RunRecord) -> dict:
    d, m = rec.data, rec.model
    cfg = d.get("config") or {}
    kind = "arena" if m.get("backend") == "arena" or (set(rec.tasks) == {ARENA_TASK}) else "static"
    created = _ts(d.get("created_at"))
    gen = cfg.get("gen_overrides") or {}
    return {"run_id": rec.run_id, "folder": rec.path.name, "path": str(rec.path), "kind": kind,
            "model": str(m.get("name") or m.get("spec") or "?"), "spec": m.get("spec"),
            "backend": str(m.get("backend") or "?"), "identity_hash": m.get("identity_hash") or "",
            "gen": gen_text(gen), "entry": entry_key(str(m.get("name") or m.get("spec") or "?"),
                                                      m.get("identity_hash") or "", gen),
            "created_at": created, "date": created.date() if not pd.isna(created) else None,
            "tags": tuple(str(t) for t in cfg.get("tags") or ()), "tasks": tuple(rec.tasks),
            "evalkit_version": (d.get("versions") or {}).get("evalkit"), "git_sha": d.get("git_sha"),
            "judge": (d.get("judge") or {}).get("name"), "limit": cfg.get("limit"), "seed": cfg.get("seed")}


def _labels(static: pd.DataFrame) -> dict:
    """Row labels: the model name, plus what tells apart several settings of one name."""
    out = {}
    for name, grp in static.groupby("model"):
        variants = grp.drop_duplicates("entry")
        if len(variants) == 1:
            out[variants["entry"].iloc[0]] = str(name)
            continue
        gens_differ = variants["gen"].nunique() > 1
        ids_differ = variants["identity_hash"].nunique() > 1
        for _, v in variants.iterrows():
            parts = ([v["gen"]] if gens_differ else []) + ([f"id {v['identity_hash'][:6]}"] if ids_differ else [])
            out[v["entry"]] = f"{name} [{'; '.join(parts)}]"
    return out


def _static_cells(rec: RunRecord, row: dict, label: str) -> list[dict]:
    out = []
    for task, t in rec.tasks.items():
        base = {"run_id": row["run_id"], "entry": row["entry"], "label": label, "model": row["model"],
                "backend": row["backend"], "created_at": row["created_at"], "tags": row["tags"], "task": task,
                "family": task_family(task), "version": str(t.get("version")), "prompt_hash": t.get("prompt_hash"),
                "n_docs": t.get("n_docs"), "col": col_key(task, t.get("version"), t.get("prompt_hash"))}
        for i, (metric, mv) in enumerate((t.get("metrics") or {}).items()):
            if not isinstance(mv, dict):
                continue
            out.append({**base, "metric": metric, "metric_order": i, "value": _finite(mv.get("value")),
                        "ci_low": _finite(mv.get("ci_low")), "ci_high": _finite(mv.get("ci_high")),
                        "stderr": _finite(mv.get("stderr")), "n": mv.get("n"), "kind": mv.get("kind", "mean"),
                        "higher_is_better": bool(mv.get("higher_is_better", True))})
    return out


def _arena_cells(rec: RunRecord, row: dict, by_name: dict, labels: dict) -> list[dict]:
    """A rated model joins the static row of the same name when exactly one exists, else its own row."""
    out = []
    for task, t in rec.tasks.items():
        ratings = t.get("ratings") or {}
        method = (t.get("config") or {}).get("method", "bt")
        for model, r in ratings.items():
            entries = list(by_name.get(model, ()))
            entry = entries[0] if len(entries) == 1 else entry_key(model, "", {"arena": True})
            out.append({"run_id": row["run_id"], "entry": entry, "label": labels.get(entry, model), "model": model,
                        "backend": "arena", "created_at": row["created_at"], "tags": row["tags"], "task": task,
                        "family": "arena", "version": str(t.get("version")), "prompt_hash": t.get("prompt_hash"),
                        "n_docs": t.get("n_docs"), "col": col_key(task, t.get("version"), t.get("prompt_hash")),
                        "metric": f"rating ({method})", "metric_order": 0, "value": _finite(r.get("rating")),
                        "ci_low": _finite(r.get("ci_low")), "ci_high": _finite(r.get("ci_high")), "stderr": None,
                        "n": r.get("n_battles"), "kind": "rating", "higher_is_better": True})
    return out


def _label_columns(cells: pd.DataFrame) -> pd.DataFrame:
    """Column labels: the task name, or ``task (v2, prompt 3f2a…, 50 docs)`` when a task has several."""
    labels, notes = {}, {}
    if len(cells):
        for task, grp in cells.groupby("task"):
            cols = grp.drop_duplicates("col")
            if len(cols) == 1:
                labels[cols["col"].iloc[0]] = str(task)
                continue
            vers_differ = cols["version"].nunique() > 1
            for _, c in cols.iterrows():
                parts = ([f"v{c['version']}"] if vers_differ else []) + [f"prompt {str(c['prompt_hash'])[:4]}…"]
                if c["n_docs"] is not None:
                    parts.append(f"{c['n_docs']} docs")
                labels[c["col"]] = f"{task} ({', '.join(parts)})"
                notes[c["col"]] = (f"{task} has {len(cols)} columns: its runs' prompts differ (the prompt hash "
                                   f"covers the prompt of every evaluated doc, so another template, few-shot "
                                   f"setting, system prompt or doc subset makes a new column)")
    cells["col_label"] = cells["col"].map(labels) if len(cells) else pd.Series(dtype=str)
    cells["col_note"] = cells["col"].map(notes) if len(cells) else pd.Series(dtype=str)
    return cells


# ---- samples ------------------------------------------------------------------------------------
SAMPLE_COLUMNS = ["doc_id", "doc_index", "target", "extracted", "response", "prompt", "responses", "n_responses",
                  "finish_reason"]


def empty_samples() -> pd.DataFrame:
    return pd.DataFrame(columns=SAMPLE_COLUMNS)


def _response_text(r) -> str:
    if isinstance(r, str):
        return r
    if isinstance(r, list) and len(r) == 2 and isinstance(r[0], str) and isinstance(r[1], str):
        return r[0]                                   # a saved (text, finish_reason) pair
    return as_text(r)


def samples_frame(rec: RunRecord, task: str) -> pd.DataFrame:
    """Display-ready samples; per-sample metrics become ``metric:<name>`` columns. Built column by
    column (200,000 rows in a few seconds: the JSON parsing dominates)."""
    hide = is_redacted(task)
    cols = {c: [] for c in SAMPLE_COLUMNS}
    metrics: dict[str, list] = {}
    n = 0
    try:
        for i, s in enumerate(rec.samples(task)):
            texts = [_response_text(r) for r in (s.get("responses") or [])]
            extra = s.get("extra")
            cols["doc_id"].append(str(s.get("doc_id")))
            cols["doc_index"].append(s.get("doc_index", i))
            cols["target"].append(as_text(s.get("target")))
            cols["extracted"].append(as_text(s.get("extracted")))
            cols["response"].append(texts[0] if texts else "")
            cols["prompt"].append(as_text(s.get("prompt")))
            cols["responses"].append(texts)
            cols["n_responses"].append(len(texts))
            cols["finish_reason"].append(extra.get("finish_reason") if isinstance(extra, dict) else None)
            for k, v in (s.get("metrics") or {}).items():
                if k not in metrics:
                    metrics[k] = [None] * n
                metrics[k].append(float(v) if isinstance(v, bool) else _finite(v))
            n += 1
            for k, vals in metrics.items():
                if len(vals) < n:
                    vals.append(None)
    except FileNotFoundError:
        return empty_samples()
    if hide:
        for c in ("target", "extracted", "response", "prompt"):
            cols[c] = [HIDDEN] * n
        cols["responses"] = [[HIDDEN]] * n
    # object columns: converting ~GBs of text to Arrow strings would cost as much as parsing it
    frame = pd.DataFrame({**{c: pd.Series(v, dtype=None if c in ("doc_index", "n_responses") else object)
                             for c, v in cols.items()},
                          **{f"metric:{k}": pd.array(v, dtype="Float64").astype(float) for k, v in metrics.items()}})
    frame.attrs["redacted"] = hide
    return frame


def sample_metrics(frame: pd.DataFrame) -> list[str]:
    return [c.split(":", 1)[1] for c in frame.columns if c.startswith("metric:")]


def failures(frame: pd.DataFrame, metric: str, higher_is_better: bool = True,
             threshold: Optional[float] = None) -> pd.Series:
    """Which samples failed on ``metric``: for 0/1 metrics the samples not at the good value, for
    other metrics those worse than ``threshold`` (default: the mean). Samples without it never fail."""
    col = f"metric:{metric}"
    if col not in frame:
        return pd.Series(False, index=frame.index)
    v = pd.to_numeric(frame[col], errors="coerce")
    known = v.dropna()
    if len(known) and known.isin([0.0, 1.0]).all():
        good = 1.0 if higher_is_better else 0.0
        return v.notna() & (v != good)
    cut = float(known.mean()) if threshold is None and len(known) else threshold
    if cut is None:
        return pd.Series(False, index=frame.index)
    return v.notna() & ((v < cut) if higher_is_better else (v > cut))


# ---- battles files --------------------------------------------------------------------------------
def battles_record(path: Path, rounds: int = 100) -> RunRecord:
    """A battles file (FastChat/LMArena JSONL) rated in memory exactly as ``evalkit arena rate`` does."""
    from evalkit.arena import load_battles
    from evalkit.judges.arena import arena_record, rate

    battles = load_battles(path)
    if not battles:
        raise ValueError(f"{path}: no battles")
    summary = rate(battles, "bt", rounds, 0)
    run = arena_record(summary, battles, {"battles": str(path)}, {"seed": 0, "tags": ["battles-file"],
                                                                  "method": "bt", "rounds": rounds},
                       [{"name": m} for m in summary["order"]])
    st = path.stat()
    run["run_id"] = f"battles-{path.stem}"
    run["created_at"] = pd.Timestamp(st.st_mtime, unit="s", tz="UTC").isoformat()
    return RunRecord(path.parent, run)
