"""What every result sink logs from a run record: metrics with their CIs, the config, the samples.

Built from the record as it is on disk (run.json + samples_<task>.jsonl), scrubbed once more with
``records.scrub`` so no credential reaches a tracking server even from an old record, and with the
questions of redacted tasks (GPQA) left out of the samples table.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Optional

from evalkit.records import Run, RunRecord, load_run, scrub

STAT_FIELDS = ("ci_low", "ci_high", "stderr", "n")


def metric_key(task: str, metric: str, stat: Optional[str] = None) -> str:
    """``task/metric`` and ``task/metric.ci_low``: valid names for MLflow (also as file-store paths) and W&B."""
    return f"{task}/{metric}" + (f".{stat}" if stat else "")


def _flat(d, prefix: str = "") -> dict:
    out = {}
    for k, v in (d or {}).items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(_flat(v, key + "."))
        else:
            out[key] = v if isinstance(v, (str, int, float, bool)) or v is None else json.dumps(v, default=str)
    return out


def _redacted_task(task: str) -> bool:
    try:
        from evalkit.compare.analysis import redacted
        return redacted(task)
    except Exception:  # noqa: BLE001 - a task that cannot be loaded: fall back to the name rule
        return task.lower().startswith("gpqa")


def _cell(v):
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return json.dumps(v, ensure_ascii=False, default=str)


@dataclass
class Payload:
    run_id: str
    name: str                                   # a readable run name: model and tasks
    metrics: dict                               # metric_key -> float (value, CI ends, stderr, n)
    params: dict                                # flat config / model / versions, scrubbed
    tags: dict
    run_json: dict                              # the scrubbed run.json
    tables: dict = field(default_factory=dict)  # task -> (columns, rows)
    files: dict = field(default_factory=dict)   # file name in the record -> Path (for the hub sink)
    run: Optional[Run] = None                   # the typed record (metric values as MetricValue)


def samples_table(rec: RunRecord, task: str, limit_chars: int = 4000) -> tuple[list, list]:
    hide = _redacted_task(task)
    rows, metric_cols = [], []
    samples = list(rec.samples(task))
    for s in samples:
        for m in (s.get("metrics") or {}):
            if m not in metric_cols:
                metric_cols.append(m)
    cols = ["doc_id", "doc_hash", "prompt", "response", "extracted", "target"] + metric_cols
    for s in samples:
        resp = s.get("responses") or []
        first = resp[0] if resp else None
        if isinstance(first, list) and first:     # [text, finish] pairs
            first = first[0]
        row = [str(s.get("doc_id")), s.get("doc_hash")]
        if hide:
            row += ["<hidden>", "<hidden>", "<hidden>", "<hidden>"]
        else:
            row += [_cell(s.get("prompt")), _cell(first), _cell(s.get("extracted")), _cell(s.get("target"))]
        row = [x[:limit_chars] if isinstance(x, str) else x for x in row]
        row += [(s.get("metrics") or {}).get(m) for m in metric_cols]
        rows.append(row)
    return cols, scrub(rows)


def _finite(x) -> Optional[float]:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def build(path, samples: bool = True) -> Payload:
    rec = load_run(path)
    run = rec.run
    metrics = {}
    for task, entry in run.tasks.items():
        for m, v in entry.metrics.items():
            for stat, x in ((None, v.value), ("ci_low", v.ci_low), ("ci_high", v.ci_high), ("stderr", v.stderr),
                            ("n", v.n)):
                if _finite(x) is not None:
                    metrics[metric_key(task, m, stat)] = _finite(x)
    model = scrub(run.model.to_dict())
    params = {**_flat(scrub(run.config), "config."),
              **_flat({k: v for k, v in model.items() if k != "identity"}, "model."),
              **{f"task.{t}.{k}": e[k] for t, e in run.tasks.items()
                 for k in ("version", "n_docs", "prompt_hash", "dataset_fingerprint", "data_source", "num_fewshot")},
              "run_id": run.run_id, "schema_version": run.schema_version}
    tags = {"evalkit.run_id": run.run_id, "evalkit.model": str(model.get("name")),
            "evalkit.backend": str(model.get("backend")), "evalkit.tasks": ",".join(run.tasks)}
    for tag in run.config.get("tags") or []:
        tags[f"evalkit.tag.{tag}"] = "true"
    name = f"{model.get('name')} {','.join(run.tasks)}"
    tables = {t: samples_table(rec, t) for t in run.tasks} if samples else {}
    files = {"run.json": rec.path / "run.json"}
    for t in run.tasks:
        f = rec.samples_path(t)
        if f.exists() and not _redacted_task(t):
            files[f.name] = f
    # no git metadata leaves the machine: the record's commit hash stays in the local run.json
    run_json = {k: v for k, v in scrub(rec.data).items() if k != "git_sha"}
    return Payload(run.run_id, name, metrics, scrub(params), tags, run_json, tables, files, run)
