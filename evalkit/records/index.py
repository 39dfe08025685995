"""The run index: a small SQLite file beside a results folder (``DIR/.evalkit-index.sqlite``) holding
each run's identity, model, kind, date, tags and every task's metric values with their intervals.

``update`` reads only the run.json files that are new or changed since the last update (by size and
modification time) and forgets the runs whose folder is gone; deleting the file loses nothing, the
next update rebuilds it from the records. Writers take SQLite's lock (WAL, with a busy timeout), so a
run finishing while another process reads or updates the index corrupts nothing, and a record caught
half-written is read again on the next update.
"""
from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from evalkit.records.record import RecordError, load_run

INDEX_NAME = ".evalkit-index.sqlite"
SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (folder TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, run_id TEXT,
    created_at TEXT, kind TEXT, model TEXT, spec TEXT, backend TEXT, identity_hash TEXT, tags TEXT);
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
    unreadable: list
    total: int


def index_path(results_dir) -> Path:
    return Path(results_dir) / INDEX_NAME


def connect(results_dir) -> sqlite3.Connection:
    results = Path(results_dir)
    if not results.is_dir():
        raise FileNotFoundError(f"{results}: no such results folder")
    con = sqlite3.connect(index_path(results), timeout=30)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA busy_timeout=30000")
    con.executescript(SCHEMA)
    return con


def update(results_dir) -> Updated:
    """Bring the index up to date with the records in ``results_dir`` (one folder per run)."""
    results = Path(results_dir)
    con = connect(results)
    try:
        known = {row[0]: (row[1], row[2]) for row in con.execute("SELECT folder, size, mtime_ns FROM runs")}
        seen, read, unreadable = set(), 0, []
        for run_json in sorted(results.glob("*/run.json")):
            folder = run_json.parent.name
            if folder.startswith("."):
                continue
            seen.add(folder)
            stat = run_json.stat()
            if known.get(folder) == (stat.st_size, stat.st_mtime_ns):
                continue
            try:
                rows = _rows(run_json.parent, stat)
            except (RecordError, ValueError, OSError) as e:
                unreadable.append(f"{run_json}: {e}")
                continue
            with con:  # one transaction per record: a reader never sees half of one
                _forget(con, folder)
                con.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows[0])
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


def _forget(con: sqlite3.Connection, folder: str) -> None:
    con.execute("DELETE FROM runs WHERE folder = ?", (folder,))
    con.execute("DELETE FROM metrics WHERE folder = ?", (folder,))


def _rows(folder: Path, stat) -> tuple:
    run = load_run(folder).run
    m = run.model
    tags = run.config.get("tags") if isinstance(run.config, dict) else None
    head = (folder.name, stat.st_size, stat.st_mtime_ns, run.run_id, run.created_at, run.kind, m.name, m.spec,
            m.backend, m.identity_hash, json.dumps(list(tags or [])))
    metrics = [(folder.name, task, name, mv.get("value"), mv.get("ci_low"), mv.get("ci_high"), mv.get("n"),
                int(bool(mv.get("higher_is_better", True))))
               for task, entry in run.tasks.items() for name, mv in entry.metrics.items()]
    return head, metrics


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
        found = [dict(r) for r in con.execute(f"SELECT * FROM runs {where} ORDER BY created_at DESC, folder", args)]
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

