"""``ResultsStore``: every run record under one results folder (plus battle files), read lazily and
cached (no Streamlit here: notebooks can use it).

``refresh()`` brings the folder's run index (``evalkit.records.index``) up to date, which reads only
the ``run.json`` files whose size or mtime changed, and takes the runs' summaries from it: the
leaderboard never parses 10,000 run.json files, and a rerun of the dashboard costs a directory
listing. ``records()`` are those summaries (metrics, CIs, config, judge figures; not the bulky
per-task parts); ``record(run_id)`` is the whole run.json, read when a view needs one run's
breakdowns or extras (the last few kept). Samples are read only when a view asks for one (run,
task), and the last few are kept in memory. A record or battle file that cannot be read is skipped
and named in ``errors`` (file: why), never raised.

Frames: ``runs()`` one row per run; ``cells()`` one row per run x task x metric (``cells.py``);
``samples(run_id, task)`` one row per sample (``samples.py``).
"""
from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import pandas as pd

from evalkit.records import RunRecord, index, load_run

from .battles import battles_record
from .cells import CELL_COLUMNS, RUN_COLUMNS, arena_cells, run_row, static_cells
from .labels import label_columns, row_labels
from .samples import empty_samples, samples_frame, samples_path

SAMPLE_CACHE_SIZE = 8
RECORD_CACHE_SIZE = 64


@contextlib.contextmanager
def paused_gc():
    """The cyclic garbage collector paused while 10,000 records' objects are made (none of them
    cyclic garbage): its passes over the growing heap were a third of the load."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@dataclass
class _Loaded:
    sig: tuple
    record: RunRecord


def _check(rec: RunRecord) -> RunRecord:
    """``load_run`` has typed the record (tasks, model and metric values, a wrong one named by file
    and field); the run id every view keys on must also be a string."""
    if not isinstance(rec.run.run_id, str):
        raise ValueError(f"{rec.path / 'run.json'}: field 'run_id' is missing or not a string")
    return rec


class ResultsStore:
    """All run records under one results folder (plus optional battle files), read lazily."""

    def __init__(self, results_dir, battles: Iterable = (), rating_rounds: int = 100):
        self.results_dir = Path(results_dir)
        self.battle_files = [Path(b) for b in battles]
        self.rating_rounds = rating_rounds
        self._loaded: dict[str, _Loaded] = {}
        self._battle_records: dict[str, _Loaded] = {}
        self._frames: dict = {}            # runs, cells (frames) and records (a dict), per version
        self._samples: OrderedDict = OrderedDict()
        self._full: OrderedDict = OrderedDict()
        self._listed = float("-inf")
        self.version = 0
        self.errors: dict[str, str] = {}
        self._lock = threading.RLock()   # one store serves every browser session (threads)

    # ---- summaries ------------------------------------------------------------------------------
    def refresh(self, max_age: float = 0.0) -> bool:
        """Re-read changed ``run.json`` files; returns True when anything changed. ``max_age``: skip
        the folder listing when the last one is younger than this many seconds (the app passes 2 s:
        at 10,000 runs a listing costs ~0.2 s, and a click reruns the page)."""
        with self._lock, paused_gc():
            if max_age and time.monotonic() - self._listed < max_age:
                return False
            self._listed = time.monotonic()
            return self._refresh()

    def _refresh(self) -> bool:
        changed = self._refresh_runs()
        changed |= self._refresh_battles()
        if changed:
            self._frames.clear()
            self.version += 1
        return changed

    def _refresh_runs(self) -> bool:
        if not self.results_dir.is_dir():
            changed = bool(self._loaded)
            self._loaded.clear()
            return changed
        done = index.update(self.results_dir)
        for folder in [f for f in self.errors if f not in done.unreadable and "/" not in f]:
            del self.errors[folder]
        self.errors.update(done.unreadable)
        sigs, fresh = index.summaries(self.results_dir, {f: x.sig for f, x in self._loaded.items()})
        changed = False
        for folder, data in fresh.items():
            try:
                self._loaded[folder] = _Loaded(sigs[folder], _check(RunRecord(self.results_dir / folder, data)))
            except (ValueError, OSError) as e:
                self.errors[folder] = f"{self.results_dir / folder / 'run.json'}: {e}"
                self._loaded.pop(folder, None)
            changed = True
        for gone in set(self._loaded) - set(sigs):
            del self._loaded[gone]
            changed = True
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
        """run id -> record (run folders first, then battle files rated in memory); made once per
        version of the data (views look records up per row)."""
        with self._lock:
            out = self._frames.get("records")
            if out is None:
                out = {}
                for item in list(self._loaded.values()) + list(self._battle_records.values()):
                    out.setdefault(item.record.run_id, item.record)
                self._frames["records"] = out
            return out

    def record(self, run_id: str) -> RunRecord:
        """The whole record of one run (its run.json read again when it changed; the last few kept)."""
        recs = self.records()
        if run_id not in recs:
            raise KeyError(f"no run {run_id!r} in {self.results_dir}")
        summary = recs[run_id]
        rj = Path(summary.path) / "run.json"
        try:
            st = rj.stat()
        except OSError:
            return summary                     # a battle file's ratings, or a folder just removed
        key = (run_id, st.st_mtime_ns, st.st_size)
        with self._lock:
            if key in self._full:
                self._full.move_to_end(key)
                return self._full[key]
        try:
            full = _check(load_run(rj.parent))
        except (ValueError, OSError):
            return summary
        with self._lock:
            self._full[key] = full
            while len(self._full) > RECORD_CACHE_SIZE:
                self._full.popitem(last=False)
        return full

    def task_part(self, run_id: str, task: str, part: str):
        """A task's ``part`` (``breakdowns``, ``grpo``, ``best_of_n``, ``extra``, ``budget``...) of one
        run: from its summary, or from its whole record when the summary left that part out."""
        entry = self.records()[run_id].tasks.get(task)
        if entry is None:
            return None
        if part in (entry.get("left_out") or ()):
            entry = self.record(run_id).tasks.get(task) or {}
        return entry.get(part)

    def runs(self) -> pd.DataFrame:
        with self._lock:
            if "runs" not in self._frames:
                with paused_gc():
                    self._build()
            return self._frames["runs"]

    def cells(self) -> pd.DataFrame:
        with self._lock:
            if "cells" not in self._frames:
                with paused_gc():
                    self._build()
            return self._frames["cells"]

    def _build(self) -> None:
        recs = self.records()
        run_rows, cell_rows = [], []
        for rec in recs.values():
            run_rows.append(run_row(rec))
        runs = pd.DataFrame(run_rows, columns=RUN_COLUMNS)
        static = runs[runs["kind"] != "arena"]
        labels, setting_labels = row_labels(static), row_labels(static, "setting_entry")
        by_name = static.groupby("model")["entry"].unique().to_dict() if len(static) else {}
        for rec, row in zip(recs.values(), run_rows):
            if row["kind"] == "arena":
                cell_rows.extend(arena_cells(rec, row, by_name, labels))
            else:
                cell_rows.extend(static_cells(rec, row, labels[row["entry"]], setting_labels[row["setting_entry"]]))
        runs["label"] = [labels.get(e, m) for e, m in zip(runs["entry"], runs["model"])]
        cells = pd.DataFrame(cell_rows, columns=CELL_COLUMNS)
        cells = label_columns(cells)
        if len(cells):
            cells = cells.sort_values("created_at", ascending=False, kind="stable")
            key = ["entry", "col", "metric"]
            cells["n_runs"] = cells.groupby(key)["run_id"].transform("count")
            cells["n_settings"] = cells.groupby(key)["settings"].transform("nunique")
            cells["latest"] = ~cells.duplicated(key, keep="first")
        else:
            cells["n_runs"], cells["latest"] = pd.Series(dtype=int), pd.Series(dtype=bool)
            cells["n_settings"] = pd.Series(dtype=int)
        self._frames["runs"] = runs.sort_values("created_at", ascending=False, kind="stable").reset_index(drop=True)
        self._frames["cells"] = cells.reset_index(drop=True)

    # ---- samples --------------------------------------------------------------------------------
    def samples(self, run_id: str, task: str) -> pd.DataFrame:
        """One row per sample of ``task`` in ``run_id`` (read on first use, then cached); bad lines
        are skipped and listed in ``frame.attrs["warnings"]``."""
        rec = self.record(run_id)
        path = samples_path(rec, task)
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
