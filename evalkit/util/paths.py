"""Where evalkit keeps its files by default (the response cache, converted models, hash memos)."""
from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    return Path(os.environ.get("EVALKIT_CACHE_DIR", Path.home() / ".cache" / "evalkit"))


def publish_dir(tmp: Path, dest: Path, replace: bool = False) -> Path:
    """Move the finished directory ``tmp`` to ``dest`` in one rename. When another process published
    ``dest`` meanwhile (two test workers preparing one model), theirs is kept and ``tmp`` dropped: a
    directory someone may be loading is never deleted, unless ``replace`` (a forced rebuild) asks."""
    import shutil
    tmp, dest = Path(tmp), Path(dest)
    if dest.exists():
        if not replace:
            shutil.rmtree(tmp, ignore_errors=True)
            return dest
        shutil.rmtree(dest)
    try:
        os.replace(tmp, dest)
    except OSError:
        if not dest.exists():
            raise
        shutil.rmtree(tmp, ignore_errors=True)  # published by another process between the check and here
    return dest


def unique_tmp(path: Path) -> Path:
    """A sibling temporary name of ``path`` that no other process uses at the same time."""
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")
