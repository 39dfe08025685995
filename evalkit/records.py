"""Run records: ``results/<run-id>/run.json`` plus one ``samples_<task>.jsonl`` per task.

A record is self-describing (config, model identity, versions, data and prompt hashes, metrics
with CIs, every sample). It is written into a temporary folder and renamed into place, so a run
killed while writing never leaves a half-written record.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional

from evalkit.jsonio import read_json, read_jsonl

SCHEMA_VERSION = 1

# key names that hold credentials: api_key, token, hf_token, access_token, client_secret, password...
_SECRET_KEY = re.compile(r"(^|[_-])(api_?key|apikey|token|secret|password|passwd|authorization|bearer|credentials?)$")
# settings that end in "token" but are flags or ids, not credentials (add_bos_token, pad_token)
_NOT_SECRET = re.compile(r"(^|_)(bos|eos|pad|unk|sep|cls|mask)_token(_id)?$")
# values that look like keys whatever their field is called (OpenAI/HF style)
_SECRET_VALUE = re.compile(r"^(sk-|hf_|Bearer\s)[A-Za-z0-9_\-]{12,}")


def _is_secret(key) -> bool:
    k = str(key).lower()
    return bool(_SECRET_KEY.search(k)) and not _NOT_SECRET.search(k)


def scrub(obj):
    """Drop anything that looks like a secret from a dict tree before it is written anywhere."""
    if isinstance(obj, dict):
        return {k: ("<redacted>" if _is_secret(k) else scrub(v)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [scrub(v) for v in obj]
    if isinstance(obj, str) and _SECRET_VALUE.match(obj):
        return "<redacted>"
    if isinstance(obj, str) and "://" in obj:  # user:key@host and ?api-key= in URLs
        from evalkit.redact import redact_text
        return redact_text(obj)
    return obj


def atomic_write_text(path: Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def samples_filename(task: str) -> str:
    return f"samples_{task}.jsonl"


def write_run(results_dir: os.PathLike, run: dict, samples: dict[str, list[dict]]) -> Path:
    """Write a run folder atomically; returns its path."""
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    final = results_dir / run["run_id"]
    tmp = Path(tempfile.mkdtemp(prefix=f".{run['run_id']}.", dir=results_dir))
    try:
        for task, rows in samples.items():
            with open(tmp / samples_filename(task), "w", encoding="utf-8") as f:
                for row in rows:
                    f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        with open(tmp / "run.json", "w", encoding="utf-8") as f:
            json.dump(scrub(run), f, indent=2, ensure_ascii=False, default=str)
        for p in tmp.iterdir():
            with open(p, "rb") as fh:
                os.fsync(fh.fileno())
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final


@dataclass
class RunRecord:
    path: Path
    data: dict = field(repr=False)

    @property
    def run_id(self) -> str:
        return self.data["run_id"]

    @property
    def tasks(self) -> dict:
        return self.data.get("tasks", {})

    @property
    def model(self) -> dict:
        return self.data.get("model", {})

    def metrics(self, task: str) -> dict:
        return self.tasks[task]["metrics"]

    def samples(self, task: str) -> Iterator[dict]:
        name = self.tasks[task].get("samples_file", samples_filename(task))
        yield from read_jsonl(self.path / name)


def load_run(path: os.PathLike) -> RunRecord:
    p = Path(path)
    if p.is_file():
        p = p.parent
    run_json = p / "run.json"
    if not run_json.exists():
        raise FileNotFoundError(f"{p}: not a run record (no run.json)")
    data = read_json(run_json)
    if not isinstance(data, dict):
        raise ValueError(f"{run_json}: not a run record (a JSON {type(data).__name__}, not an object)")
    if data.get("schema_version", 0) > SCHEMA_VERSION:
        raise ValueError(f"{run_json}: schema_version {data['schema_version']} is newer than this evalkit "
                         f"understands ({SCHEMA_VERSION}); upgrade evalkit")
    return RunRecord(p, data)


def iter_runs(results_dir: os.PathLike) -> Iterator[RunRecord]:
    for run_json in sorted(Path(results_dir).glob("*/run.json")):
        if run_json.parent.name.startswith("."):
            continue
        try:
            yield load_run(run_json.parent)
        except (ValueError, OSError, json.JSONDecodeError):
            continue
