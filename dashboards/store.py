"""``ResultsStore``: every run record under one results folder (plus battle files), read lazily and
cached (no Streamlit here: notebooks can use it).

``refresh()`` brings the folder's run index (``evalkit.records.index``) up to date, which reads only
the ``run.json`` files whose size or mtime changed, and takes the runs' summaries from it: the
leaderboard never parses 10,000 run.json files. A click (``refresh(max_age)``) costs a listing of the
folder's names: a run added or removed is read at once, a run.json rewritten in place by a listing in
the background, which takes the data lock only to apply what changed. ``summaries()`` are those
summaries as JSON (metrics, CIs, config, judge figures; not the bulky per-task parts), which the
frames are built from; ``records()`` types them, one run at a time
as a view asks for it; ``record(run_id)`` is the whole run.json, read when a view needs one run's
breakdowns or extras (the last few kept). Samples are read only when a view asks for one (run,
task), and the last few are kept in memory. A record or battle file that cannot be read is skipped
and named in ``errors`` (file: why), never raised.

Frames: ``runs()`` one row per run; ``cells()`` one row per run x task x metric (``cells.py``);
``samples(run_id, task)`` one row per sample (``samples.py``).
"""
from __future__ import annotations

import contextlib
import gc
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

import pandas as pd

from evalkit.records import RunRecord, index, load_run

from .battles import battles_record
from .cells import cell_frame, run_frame
from .labels import label_columns, row_labels
from .samples import empty_samples, samples_frame, samples_path

SAMPLE_CACHE_SIZE = 32    # a page of models side by side reads one samples file each
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
    """A run's summary (``data``, its run.json as the index keeps it) and, once a view asked for it,
    its typed record."""
    sig: tuple
    path: Path
    data: dict
    typed: Optional[RunRecord] = None

    def record(self) -> RunRecord:
        if self.typed is None:
            self.typed = RunRecord(self.path, self.data)
        return self.typed


class _Records(Mapping):
    """run id -> typed record, each typed on first use (a page rarely needs more than a few)."""

    def __init__(self, loaded: dict):
        self._loaded = loaded

    def __getitem__(self, run_id: str) -> RunRecord:
        return self._loaded[run_id].record()

    def __iter__(self):
        return iter(self._loaded)

    def __len__(self) -> int:
        return len(self._loaded)


_SHARED: dict = {}
_SHARED_LOCK = threading.Lock()


def shared_store(results_dir, battles: Iterable = ()) -> "ResultsStore":
    """The process's one store per results folder and battle files (every browser session and the
    server's warm-up share it)."""
    key = (str(results_dir), tuple(str(b) for b in battles))
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = ResultsStore(results_dir, battles)
        return _SHARED[key]


class ResultsStore:
    """All run records under one results folder (plus optional battle files), read lazily."""

    def __init__(self, results_dir, battles: Iterable = (), rating_rounds: int = 100):
        self.results_dir = Path(results_dir)
        self.battle_files = [Path(b) for b in battles]
        self.rating_rounds = rating_rounds
        self._loaded: dict[str, _Loaded] = {}
        self._battle_records: dict[str, _Loaded] = {}
        self._frames: dict = {}            # frames, summaries and derived tables, per version of the data
        self._samples: OrderedDict = OrderedDict()
        self._full: OrderedDict = OrderedDict()
        self._listed = float("-inf")
        self._seen_folder = ()                # the run folders at the last listing (none yet)
        self._listing = threading.Lock()      # held by a background listing
        self._refreshing = threading.Lock()   # one listing at a time (the data lock is taken only to apply it)
        self.version = 0
        self.errors: dict[str, str] = {}
        self._lock = threading.RLock()   # one store serves every browser session (threads)

    # ---- summaries ------------------------------------------------------------------------------
    def refresh(self, max_age: float = 0.0) -> bool:
        """Re-read changed ``run.json`` files; returns True when anything changed.

        ``max_age`` (the app passes 2 s: at 10,000 runs a listing costs ~0.15 s, and every click reruns
        the page): a listing younger than this is reused. An older one is redone at once when the
        results folder itself changed (a run added or removed), else in the background: the page shows
        the data it has, and the next rerun a run.json rewritten in place."""
        if max_age:
            if time.monotonic() - self._listed < max_age:
                return False
            if self._folder_sig() == self._seen_folder:
                if self._listing.acquire(blocking=False):          # one background listing at a time
                    self._listed = time.monotonic()
                    threading.Thread(target=self._refresh_in_background, name="evalkit-refresh", daemon=True).start()
                return False
        with self._refreshing, paused_gc():
            self._listed = time.monotonic()
            return self._refresh()

    def _refresh_in_background(self) -> None:
        try:
            with self._refreshing, paused_gc():
                self._refresh()
        finally:
            self._listing.release()

    def _folder_sig(self):
        """The run folders' names (the folder's mtime would not do: the index's own files change it)."""
        try:
            with os.scandir(self.results_dir) as it:
                return frozenset(e.name for e in it if not e.name.startswith("."))
        except OSError:
            return None

    def _refresh(self) -> bool:
        """One listing (the caller holds ``_refreshing``): the index is brought up to date and read
        without the data lock, so pages keep rendering meanwhile; the changes are applied under it."""
        self._seen_folder = self._folder_sig()          # before the listing: a change during it is seen next time
        listed = self._list_runs()
        with self._lock:
            changed = self._apply_runs(listed)
            changed |= self._refresh_battles()
            if changed:
                self._frames.clear()
                self.version += 1
        return changed

    def _list_runs(self) -> Optional[tuple]:
        """``(index update, signatures, changed summaries)``; None without a results folder."""
        if not self.results_dir.is_dir():
            return None
        done = index.update(self.results_dir)
        sigs, fresh = index.summaries(self.results_dir, {f: x.sig for f, x in list(self._loaded.items())})
        return done, sigs, fresh

    def _apply_runs(self, listed: Optional[tuple]) -> bool:
        if listed is None:
            changed = bool(self._loaded)
            self._loaded.clear()
            return changed
        done, sigs, fresh = listed
        for folder in [f for f in self.errors if f not in done.unreadable and "/" not in f]:
            del self.errors[folder]
        self.errors.update(done.unreadable)
        changed = False
        for folder, data in fresh.items():
            if isinstance(data.get("run_id"), str):    # the index holds records load_run accepted
                self._loaded[folder] = _Loaded(sigs[folder], self.results_dir / folder, data)
            else:
                self.errors[folder] = f"{self.results_dir / folder / 'run.json'}: field 'run_id' is not a string"
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
                rec = battles_record(path, self.rating_rounds)
                self._battle_records[str(path)] = _Loaded(sig, rec.path, rec.data, rec)
                self.errors.pop(str(path), None)
            except (ValueError, OSError) as e:
                self.errors[str(path)] = str(e)
            changed = True
        return changed

    def _by_run(self) -> dict[str, _Loaded]:
        """run id -> loaded run (run folders first, then battle files rated in memory; a run id seen
        twice keeps the first); made once per version of the data."""
        with self._lock:
            out = self._frames.get("by_run")
            if out is None:
                out = {}
                for item in list(self._loaded.values()) + list(self._battle_records.values()):
                    out.setdefault(item.data["run_id"], item)
                self._frames["by_run"] = out
            return out

    def summaries(self) -> dict[str, dict]:
        """run id -> the run's summary as JSON (``records()`` untyped: what a view reading every run uses)."""
        with self._lock:
            out = self._frames.get("summaries")
            if out is None:
                out = self._frames["summaries"] = {r: item.data for r, item in self._by_run().items()}
            return out

    def records(self) -> Mapping[str, RunRecord]:
        """run id -> typed record of the run's summary, typed when first looked up."""
        return _Records(self._by_run())

    def record(self, run_id: str) -> RunRecord:
        """The whole record of one run (its run.json read again when it changed; the last few kept)."""
        loaded = self._by_run()
        if run_id not in loaded:
            raise KeyError(f"no run {run_id!r} in {self.results_dir}")
        summary = loaded[run_id].record()
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
            full = load_run(rj.parent)
        except (ValueError, OSError):
            return summary
        if full.run_id != run_id:             # rewritten under another id since it was indexed
            return summary
        with self._lock:
            self._full[key] = full
            while len(self._full) > RECORD_CACHE_SIZE:
                self._full.popitem(last=False)
        return full

    def task_part(self, run_id: str, task: str, part: str):
        """A task's ``part`` (``breakdowns``, ``grpo``, ``best_of_n``, ``extra``, ``budget``...) of one
        run: from its summary, or from its whole record when the summary left that part out."""
        entry = (self.summaries()[run_id].get("tasks") or {}).get(task)
        if entry is None:
            return None
        if part in (entry.get("left_out") or ()):
            entry = self.record(run_id).tasks.get(task) or {}
        return entry.get(part)

    def derived(self, name: str, make):
        """What ``make()`` builds from every run (judge figures, suite rows, arena boards), made once per
        version of the data; callers must not change it."""
        with self._lock:
            if name not in self._frames:
                self._frames[name] = make()
            return self._frames[name]

    def has_part(self, run_id: str, task: str, part: str) -> bool:
        """Whether a run's task has ``part`` (in its summary, or left out of it), without reading it."""
        entry = (self.summaries()[run_id].get("tasks") or {}).get(task) or {}
        return bool(entry.get(part)) or part in (entry.get("left_out") or ())

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
        items = [(item.path, item.data) for item in self._by_run().values()]
        runs = run_frame(items)
        static = runs[runs["kind"] != "arena"]
        labels, setting_labels = row_labels(static), row_labels(static, "setting_entry")
        runs["label"] = [labels.get(e, m) for e, m in zip(runs["entry"], runs["model"])]
        cells = label_columns(cell_frame(items, runs, labels, setting_labels))
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
