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

from evalkit.requests import response_from_json, response_to_json


def default_cache_dir() -> Path:
    return Path(os.environ.get("EVALKIT_CACHE_DIR", Path.home() / ".cache" / "evalkit"))


class ResponseCache:
    def __init__(self, path: Optional[os.PathLike] = None):
        self.path = Path(path) if path else default_cache_dir() / "responses.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), timeout=60, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (model TEXT NOT NULL, key TEXT NOT NULL, "
            "kind TEXT NOT NULL, response TEXT NOT NULL, PRIMARY KEY (model, key))"
        )
        self._db.commit()

    def get_many(self, model: str, kind: str, keys: Iterable[str]) -> dict:
        keys = list(keys)
        found = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                chunk = keys[i:i + 500]
                q = f"SELECT key, response FROM responses WHERE model=? AND key IN ({','.join('?' * len(chunk))})"
                for k, r in self._db.execute(q, [model, *chunk]):
                    found[k] = response_from_json(kind, json.loads(r))
        return found

    def put_many(self, model: str, kind: str, items: Iterable[tuple]) -> None:
        rows = [(model, k, kind, json.dumps(response_to_json(kind, v))) for k, v in items]
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO responses VALUES (?,?,?,?)", rows)
            self._db.commit()

    def count(self, model: Optional[str] = None) -> int:
        with self._lock:
            if model is None:
                return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
            return self._db.execute("SELECT COUNT(*) FROM responses WHERE model=?", (model,)).fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()


class NullCache:
    """Used with ``--no-cache``."""

    def get_many(self, model, kind, keys):
        return {}

    def put_many(self, model, kind, items):
        pass

    def close(self):
        pass
