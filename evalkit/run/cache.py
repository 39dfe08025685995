"""Persistent response cache (SQLite, WAL): a run killed at any point keeps every committed batch.

Rows are keyed by (model identity hash, request key) and carry the time they were written (for
``evalkit cache prune --older-than``). Only responses are stored: never API keys or other secrets
(the model identity holds none, see ``evalkit.backends.model_dirs``).

WAL is unsafe on network file systems (NFS, SMB, sshfs, ...): opening a cache there is refused
with a message saying what to do, unless ``EVALKIT_CACHE_NETWORK_FS=rollback`` asks for SQLite's
rollback journal instead (slower, and still only safe when one machine writes at a time).
"""
from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Iterable, Optional

from evalkit.util import fs_check
from evalkit.util.paths import default_cache_dir
from evalkit.util.errors import CacheError
from evalkit.taskapi.requests import response_from_json, response_to_json

log = logging.getLogger(__name__)
NETWORK_FS_ENV = "EVALKIT_CACHE_NETWORK_FS"


class CacheLocationError(ValueError):
    """The cache path is on a file system where SQLite's WAL locking is unsafe."""


def journal_mode_for(path: Path) -> str:
    """``WAL`` on local disks; refuse (or, when asked, ``DELETE``) on a network file system."""
    mount = fs_check.network_fs(path.parent)
    if mount is None:
        return "WAL"
    where = f"{path} is on {mount.fstype} ({mount.device} mounted at {mount.point})"
    if os.environ.get(NETWORK_FS_ENV, "").lower() == "rollback":
        log.warning("%s, a network file system: the response cache uses SQLite's rollback journal instead of "
                    "WAL; let only one machine write it at a time", where)
        return "DELETE"
    raise CacheLocationError(
        f"{where}, a network file system where SQLite's WAL locking is unsafe (concurrent writers can corrupt "
        f"the cache). Put the cache on a local disk (--cache-dir DIR or EVALKIT_CACHE_DIR), run with --no-cache, "
        f"or set {NETWORK_FS_ENV}=rollback to use a rollback journal at your own risk")


HINT = "run with --no-cache, or point --cache-dir at another folder"


class ResponseCache:
    def __init__(self, path: Optional[os.PathLike] = None):
        self.path = Path(path) if path else default_cache_dir() / "responses.sqlite"
        self._lock = threading.Lock()
        self._db = None
        check_cache_file(self.path)  # a file that cannot be read is reported, never overwritten
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.journal_mode = journal_mode_for(self.path)
            self._db = sqlite3.connect(str(self.path), timeout=60, check_same_thread=False)
            self._db.execute(f"PRAGMA journal_mode={self.journal_mode}")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS responses (model TEXT NOT NULL, key TEXT NOT NULL, "
                "kind TEXT NOT NULL, response TEXT NOT NULL, created REAL, PRIMARY KEY (model, key))"
            )
            cols = {row[1] for row in self._db.execute("PRAGMA table_info(responses)")}
            if "created" not in cols:   # a cache written before timestamps: its rows count from today
                self._db.execute("ALTER TABLE responses ADD COLUMN created REAL")
                self._db.execute("UPDATE responses SET created=?", (time.time(),))
            self._db.commit()
        except (sqlite3.Error, OSError) as e:
            if self._db is not None:
                self._db.close()
            raise self._error("cannot open", e) from None

    def _error(self, what: str, e: BaseException) -> CacheError:
        return CacheError(f"response cache {self.path}: {what} ({type(e).__name__}: {e}); {HINT}")

    def get_many(self, model: str, kind: str, keys: Iterable[str]) -> dict:
        keys = list(keys)
        found = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                chunk = keys[i:i + 500]
                q = f"SELECT key, response FROM responses WHERE model=? AND key IN ({','.join('?' * len(chunk))})"
                try:
                    for k, r in self._db.execute(q, [model, *chunk]):
                        try:
                            found[k] = response_from_json(kind, json.loads(r))
                        except (ValueError, TypeError, IndexError, KeyError):
                            continue  # an unreadable row is recomputed (and replaced), never served
                except sqlite3.Error as e:
                    raise self._error("cannot read", e) from None
        return found

    def put_many(self, model: str, kind: str, items: Iterable[tuple]) -> None:
        now = time.time()
        rows = [(model, k, kind, json.dumps(response_to_json(kind, v)), now) for k, v in items]
        with self._lock:
            try:
                self._db.executemany("INSERT OR REPLACE INTO responses (model, key, kind, response, created) "
                                     "VALUES (?,?,?,?,?)", rows)
                self._db.commit()
            except sqlite3.Error as e:
                raise self._error("cannot write", e) from None

    def count(self, model: Optional[str] = None) -> int:
        with self._lock:
            if model is None:
                return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
            return self._db.execute("SELECT COUNT(*) FROM responses WHERE model=?", (model,)).fetchone()[0]

    def stats(self) -> list[dict]:
        """Per model identity and request kind: rows, bytes of responses, oldest and newest write."""
        q = ("SELECT model, kind, COUNT(*), SUM(LENGTH(response)), MIN(created), MAX(created) FROM responses "
             "GROUP BY model, kind ORDER BY MAX(created) DESC")
        with self._lock:
            return [{"model": m, "kind": k, "rows": n, "bytes": b or 0, "oldest": lo, "newest": hi}
                    for m, k, n, b, lo, hi in self._db.execute(q)]

    def delete(self, older_than: Optional[float] = None, model: Optional[str] = None,
               kind: Optional[str] = None, dry_run: bool = False) -> int:
        """Delete rows written before ``older_than`` (unix time) / of a model hash prefix / of a kind."""
        where, params = [], []
        if older_than is not None:
            where.append("created < ?")
            params.append(older_than)
        if model:
            where.append("substr(model, 1, ?) = ?")
            params += [len(model), model]
        if kind:
            where.append("kind = ?")
            params.append(kind)
        cond = (" WHERE " + " AND ".join(where)) if where else ""
        with self._lock:
            n = self._db.execute(f"SELECT COUNT(*) FROM responses{cond}", params).fetchone()[0]
            if not dry_run and n:
                self._db.execute(f"DELETE FROM responses{cond}", params)
                self._db.commit()
                self._db.execute("VACUUM")
                if self.journal_mode == "WAL":
                    self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return n

    def files(self) -> list[Path]:
        return [p for p in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm"),
                            Path(f"{self.path}-journal")) if p.exists()]

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def _recovered_from_wal(path: Path) -> bool:
    """A file shorter than its header says whose missing pages are in its WAL (a checkpoint cut
    short, e.g. by a full disk) is a valid cache: SQLite reads it whole. Checked, then checkpointed."""
    wal = Path(f"{path}-wal")
    if not wal.is_file() or wal.stat().st_size == 0:
        return False
    db = None
    try:
        db = sqlite3.connect(str(path), timeout=60)
        if db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
            return False
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return True
    except sqlite3.Error:
        return False
    finally:
        if db is not None:
            db.close()


def check_cache_file(path: Path) -> None:
    """Refuse a cache file that is not a SQLite database, is cut short or cannot be written, before
    SQLite touches it (SQLite itself would report "file is not a database" with no path, or write
    into a damaged file)."""
    try:
        if not path.exists():
            parent = next(p for p in (path.parent, *path.parent.parents) if p.exists())
            if not parent.is_dir() or not os.access(parent, os.W_OK):
                raise CacheError(f"response cache {path}: cannot create it ({parent} is not a writable folder); {HINT}")
            return
        if not path.is_file():
            raise CacheError(f"response cache {path}: not a file; {HINT}")
        size = path.stat().st_size
        if size == 0:
            return  # SQLite makes an empty file a database
        with open(path, "rb") as f:
            head = f.read(100)
    except OSError as e:
        raise CacheError(f"response cache {path}: cannot read it ({e.strerror or e}); {HINT}") from None
    if not head.startswith(b"SQLite format 3\x00"):
        raise CacheError(f"response cache {path}: not a SQLite database (corrupt or another file); it was left "
                         f"untouched; {HINT} (or move the file away to start a new cache)")
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    pages = int.from_bytes(head[28:32], "big")
    valid = head[24:28] == head[92:96]  # the in-header page count is valid when these match
    if valid and pages and len(head) == 100 and size < page * pages and not _recovered_from_wal(path):
        raise CacheError(f"response cache {path}: truncated ({size} bytes of {page * pages}); it was left untouched; "
                         f"{HINT} (or move the file away to start a new cache)")
    if not os.access(path, os.W_OK) or not os.access(path.parent, os.W_OK):
        raise CacheError(f"response cache {path}: read-only (the cache is written as the run goes); {HINT}")


class NullCache:
    """Used with ``--no-cache``."""

    def get_many(self, model, kind, keys):
        return {}

    def put_many(self, model, kind, items):
        pass

    def close(self):
        pass
