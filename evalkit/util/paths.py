"""Where evalkit keeps its files by default (the response cache, converted models, hash memos)."""
from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    return Path(os.environ.get("EVALKIT_CACHE_DIR", Path.home() / ".cache" / "evalkit"))
