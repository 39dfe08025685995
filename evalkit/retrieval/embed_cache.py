"""A content-addressed embedding cache (SQLite, WAL): one row per (embedder identity, text hash),
committed per batch, so a killed run resumes where it stopped and changing k, a metric or the
fusion never re-embeds. Texts are deduped before embedding. (Embeddings do not go through the
request engine yet; this cache gives the same dedupe / cache / resume guarantees for them.)"""
from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np
from tqdm.auto import tqdm


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    def __init__(self, path: Optional[Path]):
        self.path = path
        self.db = None
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(path))
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("CREATE TABLE IF NOT EXISTS emb (model TEXT, key TEXT, dim INTEGER, vec BLOB, "
                            "PRIMARY KEY (model, key))")
        self.stats = {"texts": 0, "unique": 0, "cached": 0, "computed": 0}

    def _get(self, model: str, keys: Sequence[str]) -> dict:
        out = {}
        if self.db is None:
            return out
        for i in range(0, len(keys), 500):
            chunk = list(keys[i:i + 500])
            q = f"SELECT key, vec FROM emb WHERE model=? AND key IN ({','.join('?' * len(chunk))})"
            for k, blob in self.db.execute(q, [model, *chunk]):
                out[k] = np.frombuffer(blob, dtype=np.float32)
        return out

    def embed(self, model: str, texts: Sequence[str], compute: Callable[[list[str]], np.ndarray],
              batch_size: int = 64, desc: str = "embed") -> np.ndarray:
        """Embeddings of ``texts`` (rows in order) from the cache, computing the missing ones."""
        keys = [text_key(t) for t in texts]
        unique = dict(zip(keys, texts))
        have = self._get(model, list(unique))
        todo = [k for k in unique if k not in have]
        self.stats["texts"] += len(texts)
        self.stats["unique"] += len(unique)
        self.stats["cached"] += len(unique) - len(todo)
        for i in tqdm(range(0, len(todo), batch_size), desc=desc, disable=len(todo) <= batch_size, unit="batch"):
            chunk = todo[i:i + batch_size]
            vecs = np.asarray(compute([unique[k] for k in chunk]), dtype=np.float32)
            for k, v in zip(chunk, vecs):
                have[k] = v
            if self.db is not None:
                with self.db:
                    self.db.executemany("INSERT OR REPLACE INTO emb VALUES (?, ?, ?, ?)",
                                        [(model, k, len(v), v.tobytes()) for k, v in zip(chunk, vecs)])
            self.stats["computed"] += len(chunk)
        return np.stack([have[k] for k in keys]) if keys else np.zeros((0, 0), dtype=np.float32)

    def close(self):
        if self.db is not None:
            self.db.close()
            self.db = None
