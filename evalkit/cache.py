"""Persistent response cache (SQLite, WAL): a run killed at any point keeps every committed batch.

Rows are keyed by (model identity hash, request key). Only responses are stored: never API keys or
other secrets (the model identity holds none, see ``evalkit.models``).
"""
from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Iterable, Optional

from evalkit.errors import CacheError
from evalkit.requests import response_from_json, response_to_json


def default_cache_dir() -> Path:
    return Path(os.environ.get("EVALKIT_CACHE_DIR", Path.home() / ".cache" / "evalkit"))


HINT = "run with --no-cache, or point --cache-dir at another folder"


class ResponseCache:
    def __init__(self, path: Optional[os.PathLike] = None):
        self.path = Path(path) if path else default_cache_dir() / "responses.sqlite"
        self._lock = threading.Lock()
        self._db = None
        check_cache_file(self.path)  # a file that cannot be read is reported, never overwritten
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(self.path), timeout=60, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS responses (model TEXT NOT NULL, key TEXT NOT NULL, "
                "kind TEXT NOT NULL, response TEXT NOT NULL, PRIMARY KEY (model, key))"
            )
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
        rows = [(model, k, kind, json.dumps(response_to_json(kind, v))) for k, v in items]
        with self._lock:
            try:
                self._db.executemany("INSERT OR REPLACE INTO responses VALUES (?,?,?,?)", rows)
                self._db.commit()
            except sqlite3.Error as e:
                raise self._error("cannot write", e) from None

    def count(self, model: Optional[str] = None) -> int:
        with self._lock:
            if model is None:
                return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
            return self._db.execute("SELECT COUNT(*) FROM responses WHERE model=?", (model,)).fetchone()[0]

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


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
    if valid and pages and len(head) == 100 and size < page * pages:
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
