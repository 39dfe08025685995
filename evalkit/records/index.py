"""The run index: a small SQLite file beside a results folder (``DIR/.evalkit-index.sqlite``) holding
each run's identity, model, kind, date, tags and every task's metric values with their intervals.

``update`` reads only the run.json files that are new or changed since the last update (by size and
modification time) and forgets the runs whose folder is gone; deleting the file loses nothing, the
next update rebuilds it from the records. Writers take SQLite's lock (WAL, with a busy timeout), so a
run finishing while another process reads or updates the index corrupts nothing, and a record caught
half-written is read again on the next update.

Each run also keeps a *summary*: its run.json without the bulky per-task parts (breakdowns, GRPO and
best-of-N figures, extras other than the judge's figures), which the leaderboard reads instead of
10,000 run.json files. A results folder that is not writable keeps its index in the user's cache
(``$XDG_CACHE_HOME/evalkit/run-index/``). An index written by an older evalkit is rebuilt.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from evalkit.records.record import RecordError, load_run

INDEX_NAME = ".evalkit-index.sqlite"
INDEX_LAYOUT = "3"
RUN_FIELDS = ("folder", "size", "mtime_ns", "run_id", "created_at", "kind", "model", "spec", "backend",
              "identity_hash", "tags")
#: per-task parts left out of a run's summary (read from run.json when a view needs them)
BULKY = ("breakdowns", "grpo", "best_of_n")
KEPT_EXTRA = ("judge", "judge_reliability")
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS runs (folder TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, run_id TEXT,
    created_at TEXT, kind TEXT, model TEXT, spec TEXT, backend TEXT, identity_hash TEXT, tags TEXT,
    summary TEXT);
CREATE TABLE IF NOT EXISTS metrics (folder TEXT, task TEXT, metric TEXT, value REAL, ci_low REAL,
    ci_high REAL, n INTEGER, higher_is_better INTEGER, PRIMARY KEY (folder, task, metric));
CREATE INDEX IF NOT EXISTS metrics_task ON metrics (task);
CREATE INDEX IF NOT EXISTS runs_model ON runs (model);
"""


@dataclass
class Updated:
    """What an update did: records read, records forgotten, unreadable files (named) and the total."""
    read: int
    removed: int
    unreadable: dict          # folder -> why (the file named)
    total: int


def index_path(results_dir) -> Path:
    """Beside the results, or in the user's cache when the results folder is read-only."""
    results = Path(results_dir)
    if os.access(results, os.W_OK) or not results.is_dir():
        return results / INDEX_NAME
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "evalkit" / "run-index"
    cache.mkdir(parents=True, exist_ok=True)
    return cache / (hashlib.sha256(str(results.resolve()).encode()).hexdigest()[:24] + ".sqlite")


def connect(results_dir) -> sqlite3.Connection:
    results = Path(results_dir)
    if not results.is_dir():
        raise FileNotFoundError(f"{results}: no such results folder")
    con = sqlite3.connect(index_path(results), timeout=30)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA busy_timeout=30000")
    _migrate(con)
    return con


def _migrate(con: sqlite3.Connection) -> None:
    """Create the tables, or rebuild an index an older evalkit wrote (its runs are read again); one
    writer at a time (``BEGIN IMMEDIATE``), so two processes opening a new index race on nothing."""
    if _schema(con) == INDEX_LAYOUT:          # the common case: no lock taken
        return
    con.execute("BEGIN IMMEDIATE")
    try:
        _script(con, SCHEMA)
        if _schema(con) != INDEX_LAYOUT:
            _script(con, "DROP TABLE IF EXISTS runs; DROP TABLE IF EXISTS metrics;" + SCHEMA)
            con.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (INDEX_LAYOUT,))
        con.commit()
    except BaseException:
        con.rollback()
        raise


def _schema(con: sqlite3.Connection):
    try:
        row = con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    except sqlite3.OperationalError:            # a new file: no tables yet
        return None
    return row[0] if row else None


def _script(con: sqlite3.Connection, sql: str) -> None:
    for statement in sql.split(";"):
        if statement.strip():
            con.execute(statement)


def update(results_dir) -> Updated:
    """Bring the index up to date with the records in ``results_dir`` (one folder per run)."""
    results = Path(results_dir)
    con = connect(results)
    try:
        known = {row[0]: (row[1], row[2]) for row in con.execute("SELECT folder, size, mtime_ns FROM runs")}
        seen, read, unreadable = set(), 0, {}
        for folder, stat in _record_files(results):
            seen.add(folder)
            if known.get(folder) == (stat.st_size, stat.st_mtime_ns):
                continue
            run_json = results / folder / "run.json"
            try:
                rows = _rows(run_json.parent, stat)
            except (RecordError, ValueError, OSError) as e:
                unreadable[folder] = str(e) if str(run_json) in str(e) else f"{run_json}: {e}"
                continue
            with con:  # one transaction per record: a reader never sees half of one
                _forget(con, folder)
                con.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows[0])
                con.executemany("INSERT INTO metrics VALUES (?,?,?,?,?,?,?,?)", rows[1])
            read += 1
        gone = [f for f in known if f not in seen]
        with con:
            for folder in gone:
                _forget(con, folder)
        total = con.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        return Updated(read, len(gone), unreadable, total)
    finally:
        con.close()


def _record_files(results: Path):
    """(folder, stat of its run.json) for each run folder, by name (plain strings: at 10,000 runs a
    Path per file cost more than the stat calls)."""
    with os.scandir(results) as it:
        names = sorted(e.name for e in it if not e.name.startswith(".") and e.is_dir())
    for name in names:
        try:
            yield name, os.stat(os.path.join(results, name, "run.json"))
        except (FileNotFoundError, NotADirectoryError):
            continue


def _forget(con: sqlite3.Connection, folder: str) -> None:
    con.execute("DELETE FROM runs WHERE folder = ?", (folder,))
    con.execute("DELETE FROM metrics WHERE folder = ?", (folder,))


def _rows(folder: Path, stat) -> tuple:
    rec = load_run(folder)
    run, m = rec.run, rec.run.model
    tags = run.config.get("tags") if isinstance(run.config, dict) else None
    head = (folder.name, stat.st_size, stat.st_mtime_ns, run.run_id, run.created_at, run.kind, m.name, m.spec,
            m.backend, m.identity_hash, json.dumps(list(tags or [])), json.dumps(summary_of(rec.data)))
    metrics = [(folder.name, task, name, mv.get("value"), mv.get("ci_low"), mv.get("ci_high"), mv.get("n"),
                int(bool(mv.get("higher_is_better", True))))
               for task, entry in run.tasks.items() for name, mv in entry.metrics.items()]
    return head, metrics


def summary_of(data: dict) -> dict:
    """run.json without the bulky per-task parts (``BULKY``; of ``extra`` only the judge's figures;
    a rated arena task whole); a task's ``left_out`` names the parts it had."""
    tasks = {}
    for name, t in (data.get("tasks") or {}).items():
        if isinstance(t, dict) and not t.get("ratings"):       # an arena's task is kept whole
            left = [k for k in BULKY if t.get(k)]
            t = {k: v for k, v in t.items() if k not in BULKY}
            if isinstance(t.get("extra"), dict):
                if set(t["extra"]) - set(KEPT_EXTRA):
                    left.append("extra")
                t["extra"] = {k: v for k, v in t["extra"].items() if k in KEPT_EXTRA}
            if left:
                t["left_out"] = left                                 # read from run.json when asked for
        tasks[name] = t
    return {**data, "tasks": tasks}


def summaries(results_dir, known: Optional[dict] = None) -> tuple[dict, dict]:
    """``(signatures, changed)`` of the indexed runs (update first): folder -> (size, mtime_ns) for
    every run, and folder -> summary for those whose signature differs from ``known``'s."""
    known = known or {}
    con = connect(results_dir)
    try:
        sigs = {f: (size, mtime) for f, size, mtime in con.execute("SELECT folder, size, mtime_ns FROM runs")}
        want = [f for f, sig in sigs.items() if known.get(f) != sig]
        changed = {}
        for start in range(0, len(want), 500):             # SQLite's bound-parameter limit
            part = want[start:start + 500]
            rows = con.execute(f"SELECT folder, summary FROM runs WHERE folder IN ({','.join('?' * len(part))})",
                               part)
            changed.update((f, json.loads(text)) for f, text in rows)
        return sigs, changed
    finally:
        con.close()


@dataclass
class Query:
    """A filter over the index: shell-style patterns (``*``, ``?``) for the model and the task, a tag,
    and an inclusive date range on ``created_at`` (``YYYY-MM-DD`` or a full timestamp)."""
    model: Optional[str] = None
    task: Optional[str] = None
    tag: Optional[str] = None
    since: Optional[str] = None
    until: Optional[str] = None


def runs(results_dir, query: Query = Query()) -> list[dict]:
    """The runs matching ``query``, newest first, each with its tasks' metrics (only the matching tasks
    when ``query.task`` is given)."""
    con = connect(results_dir)
    con.row_factory = sqlite3.Row
    try:
        where, args = _where(query)
        found = [dict(r) for r in con.execute(f"SELECT {', '.join(RUN_FIELDS)} FROM runs {where} "
                                               f"ORDER BY created_at DESC, folder", args)]
        by_folder = {r["folder"]: r for r in found}
        for r in found:
            r["tags"], r["metrics"] = json.loads(r["tags"] or "[]"), []
        # every matching run's metrics in one query (not one per run)
        sql = f"SELECT * FROM metrics WHERE folder IN (SELECT folder FROM runs {where})"
        margs = list(args)
        if query.task:
            sql, margs = sql + " AND task GLOB ?", margs + [query.task]
        for m in con.execute(sql + " ORDER BY task, metric", margs):
            by_folder[m["folder"]]["metrics"].append(
                {k: m[k] for k in ("task", "metric", "value", "ci_low", "ci_high", "n")})
        return found
    finally:
        con.close()


def _where(q: Query) -> tuple[str, list]:
    parts, args = [], []
    if q.model:
        parts.append("(model GLOB ? OR spec GLOB ?)")
        args += [q.model, q.model]
    if q.task:
        parts.append("folder IN (SELECT folder FROM metrics WHERE task GLOB ?)")
        args.append(q.task)
    if q.tag:
        parts.append("EXISTS (SELECT 1 FROM json_each(runs.tags) WHERE value = ?)")
        args.append(q.tag)
    if q.since:
        parts.append("created_at >= ?")
        args.append(q.since)
    if q.until:
        parts.append("created_at < ?")
        args.append(_day_after(q.until) if len(q.until) == 10 else q.until)
    return ("WHERE " + " AND ".join(parts)) if parts else "", args


def _day_after(day: str) -> str:
    import datetime
    return (datetime.date.fromisoformat(day) + datetime.timedelta(days=1)).isoformat()


def check_date(text: Optional[str], flag: str) -> Optional[str]:
    """``YYYY-MM-DD`` (or an ISO timestamp) checked, for ``--since``/``--until``."""
    if text is None:
        return None
    import datetime
    try:
        (datetime.date.fromisoformat if len(text) == 10 else datetime.datetime.fromisoformat)(text)
    except ValueError:
        raise ValueError(f"{flag} {text!r}: expected a date YYYY-MM-DD (or an ISO timestamp)") from None
    return text

