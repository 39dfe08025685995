"""A battles file (FastChat/LMArena JSONL) rated in memory as ``evalkit arena rate`` does, as a run
record the store can show (``evalkit.arena`` only: no engine, backend or runner)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from evalkit.version import __version__
from evalkit.arena import load_battles
from evalkit.arena.summary import TASK, arena_entry, content_hash, rate
from evalkit.records import SCHEMA_VERSION, RunRecord


def battles_record(path: Path, rounds: int = 100) -> RunRecord:
    battles = load_battles(path)
    if not battles:
        raise ValueError(f"{path}: no battles")
    summary = rate(battles, "bt", rounds, 0)
    models = summary["order"]
    fingerprint = content_hash([b.to_dict() for b in battles])
    st = path.stat()
    config = {"seed": 0, "tags": ["battles-file"], "method": "bt", "rounds": rounds}
    run = {"schema_version": SCHEMA_VERSION, "run_id": f"battles-{path.stem}",
           "created_at": pd.Timestamp(st.st_mtime, unit="s", tz="UTC").isoformat(),
           "model": {"spec": ",".join(models), "name": f"arena({len(models)} models)", "backend": "arena",
                     "args": {}, "identity": {"models": models, "battles": fingerprint},
                     "identity_hash": fingerprint},
           "config": {"tasks": [TASK], "seed": 0, "tags": config["tags"], "arena": config,
                      "contestants": [{"name": m} for m in models]},
           "tasks": {TASK: arena_entry(summary, battles, {"battles": str(path)})},
           "versions": {"evalkit": __version__}, "git_sha": None, "engine": {}, "timings": {}}
    return RunRecord(path.parent, run)
