"""Inspect eval logs -> evalkit run records (kind ``import``), one record per log.

A log is one Inspect task run on one model: the record gets the model (provider/name, model args
and generation config, secrets dropped), the task (name, version, task args, dataset, solver plan,
scorers), every sample with its scores and token usage, and per scorer an evalkit metric.

Epochs are repeats: one row per (sample, epoch), sample by sample, epochs in order; rows of one
sample share its doc id, so they form one cluster. A metric's value and interval are computed
evalkit's way from the per-sample values: the mean over a sample's epochs, then the mean and 95%
interval over samples (what Inspect's default ``mean`` epoch reducer and ``accuracy``/``mean``
metrics compute; Inspect's own metric values and reducer are kept beside, under ``inspect``).

Pairing with evalkit runs: with ``task_map`` (Inspect task -> evalkit task; an Inspect task named like
an evalkit task is tried without it, and keeps Inspect's ids, with a note, when its samples are not
that task's docs) and evalkit able to read
that task's data, each sample takes the evalkit doc's id and hash (``evalkit.inspect_io.docs``), so
``evalkit compare``/``gate`` pair the import with an evalkit run of the task by doc. Otherwise rows
keep Inspect's sample ids and a hash of the sample (they pair with other imports of the same data).
A log written by ``evalkit export --format inspect`` carries evalkit's identities in its metadata.
"""
from __future__ import annotations

import re
from collections import OrderedDict
from pathlib import Path
from typing import Optional

from evalkit.inspect_io import samples as S
from evalkit.inspect_io.docs import DocFinder
from evalkit.inspect_io.files import inspect_version
from evalkit.importing.task_import import Pairing, task_entry
from evalkit.records import ModelInfo, Run, new_run, scrub
from evalkit.scoring.stats import mean_metric
from evalkit.taskapi import registry
from evalkit.taskapi.data import DataError
from evalkit.taskapi.items import RunContext, content_hash

#: where an exported log keeps evalkit's own identities (spec.metadata, sample.metadata)
META_KEY = "evalkit"
_GEN_KEYS = {"max_tokens": "max_tokens", "temperature": "temperature", "top_p": "top_p", "top_k": "top_k",
             "seed": "seed", "num_choices": "n", "stop_seqs": "stop"}


def record_task_name(inspect_task: str) -> str:
    """A file-safe evalkit name for an Inspect task (``inspect_evals/gsm8k`` -> ``inspect_evals__gsm8k``)."""
    return re.sub(r"[^A-Za-z0-9_.\-]+", "__", inspect_task).strip("_") or "inspect_task"


def _dump(x):
    return x.model_dump(exclude_none=True) if hasattr(x, "model_dump") else x


def _ordered(log) -> list:
    """The samples, item by item in dataset order, each item's epochs in order."""
    ids = list(getattr(log.eval.dataset, "sample_ids", None) or [])
    pos = {str(i): k for k, i in enumerate(ids)}
    first: dict = {}
    for s in log.samples or []:
        first.setdefault(str(s.id), len(first))
    return sorted(log.samples or [], key=lambda s: (pos.get(str(s.id), len(pos) + first[str(s.id)]), s.epoch))


def _per_item_metric(rows: list, name: str, higher_is_better: bool = True) -> dict:
    by_item: OrderedDict = OrderedDict()
    for r in rows:
        v = r["metrics"].get(name)
        if v is not None:
            by_item.setdefault(str(r["doc_id"]), []).append(v)
    return mean_metric([sum(v) / len(v) for v in by_item.values()], higher_is_better).to_dict()


def _inspect_figures(log) -> dict:
    """{evalkit metric name: {metric: value, ..., 'reducer': ...}} from the log's results."""
    out = {}
    for es in (log.results.scores if log.results else None) or []:
        name = es.scorer if es.name == es.scorer else f"{es.scorer}{S.KEY_SEP}{es.name}"
        figs = {m: v.value for m, v in (es.metrics or {}).items()}
        out[name] = {**figs, "reducer": es.reducer or "mean"}
    return out


def _row(sample, to_float, finder, own: Optional[dict]) -> tuple[dict, Optional[bool]]:
    """(evalkit row, whether it found its evalkit doc: None when not looked for)."""
    prompt, target = S.prompt_of(sample), S.target_of(sample)
    doc_id = str(sample.id)
    doc_hash = content_hash({"input": S.input_text(sample), "target": target, "choices": sample.choices})
    found, doc_index = None, None
    if own:
        doc_id, doc_hash = str(own.get("doc_id", doc_id)), own.get("doc_hash", doc_hash)
        prompt, target = own.get("prompt", prompt), own.get("target", target)
        doc_index = own.get("doc_index")
    elif finder is not None:
        hit = finder.find(sample.id, S.input_text(sample), target)
        found = hit is not None
        if hit is not None:
            doc_index, doc = hit
            doc_id, doc_hash = doc.id, doc.hash()
    metadata = {k: v for k, v in (sample.metadata or {}).items() if k != META_KEY}
    info = {"id": sample.id, "epoch": sample.epoch, "scores": S.raw_scores(sample.scores),
            "model_usage": S.usage_of(sample.model_usage), "metadata": scrub(metadata)}
    for k in ("total_time", "working_time"):
        if getattr(sample, k, None) is not None:
            info[k] = getattr(sample, k)
    if sample.choices:
        info["choices"] = list(sample.choices)
    if getattr(sample, "error", None) is not None:
        info["error"] = str(getattr(sample.error, "message", sample.error))
    extra = dict((own or {}).get("extra") or {})
    if not own or own.get("inspect_extra", True):
        extra["inspect"] = info
    row = {"doc_id": doc_id, "doc_hash": doc_hash, "prompt": prompt,
           "responses": own["responses"] if own and "responses" in own else S.responses_of(sample),
           "target": target, "metrics": S.metric_values(sample.scores, to_float),
           "extracted": own["extracted"] if own and "extracted" in own else S.extracted_of(sample.scores),
           "extra": extra, "prompt_hash": (own or {}).get("prompt_hash") or content_hash(prompt)}
    if doc_index is not None:
        row["doc_index"] = doc_index
    return row, found


def _status_notes(path: Path, log) -> list:
    if not log.samples:
        return [f"{path}: the log holds no samples (status {log.status}); metrics only"]
    if log.status != "success":
        return [f"{path}: the eval's status is {log.status!r}; its {len(log.samples)} logged samples are imported"]
    return []


def _pairing(ek_task: Optional[str], data_path: Optional[str], own_task: Optional[dict]) -> Pairing:
    """The evalkit task's docs; ``--data TASK=PATH`` is the user's own, so a file that is not that task's
    data is an error."""
    pairing = Pairing.open(ek_task, data_path or ((own_task or {}).get("data_source") if own_task else None),
                           bool(own_task), RunContext(num_fewshot=0))
    if pairing.unreadable and data_path:
        raise DataError(f"--data {ek_task}={data_path}: evalkit cannot read it as {ek_task}'s data "
                        f"({pairing.unreadable})")
    return pairing


def _check_metric_map(path: Path, log, metric_map: dict, own_task: Optional[dict]) -> None:
    known = set(_inspect_figures(log)) | {k for sample in _ordered(log) for k in (sample.scores or {})}
    unknown = sorted(k for k in metric_map if k not in known and k.split("/", 1)[0] not in known)
    if unknown and not own_task:
        raise DataError(f"--metric-map names metric(s) in no scorer of {path}: {', '.join(unknown)} (its scorers: "
                        f"{', '.join(sorted(known)) or 'none'})")


def _rows(log, pairing: Pairing, own_task: Optional[dict], metric_map: dict) -> list:
    """The rows of the log's samples, their metrics renamed by ``metric_map``; each paired doc's prompt
    is compared once (a doc's epochs share it)."""
    from inspect_ai.scorer import value_to_float
    to_float = value_to_float()
    finder = DocFinder(pairing.docs) if pairing.task is not None else None
    rows, seen = [], set()
    for sample in _ordered(log):
        own = (sample.metadata or {}).get(META_KEY) if own_task else None
        row, found = _row(sample, to_float, finder, own if isinstance(own, dict) else None)
        if found is False:
            pairing.missed += 1
        elif found and row["doc_id"] not in seen:
            pairing.paired(pairing.docs[row["doc_index"]], row["prompt"])
        seen.add(row["doc_id"])
        row["metrics"] = {metric_map.get(k, k): v for k, v in row["metrics"].items()}
        rows.append(row)
    return rows


def _unpair(rows: list, log) -> None:
    """Rows back to Inspect's sample ids and sample hashes."""
    for r, s in zip(rows, _ordered(log)):
        r["doc_id"] = str(s.id)
        r["doc_hash"] = content_hash({"input": S.input_text(s), "target": S.target_of(s), "choices": s.choices})
        r.pop("doc_index", None)


def _metrics(rows: list, log, metric_map: dict, notes: list) -> dict:
    """evalkit's figures of each metric, Inspect's own kept beside under ``inspect``."""
    figures = {metric_map.get(k, k): v for k, v in _inspect_figures(log).items()}
    names = list(OrderedDict.fromkeys([n for r in rows for n in r["metrics"]] + list(figures)))
    metrics = {}
    for name in names:
        m = _per_item_metric(rows, name)
        if name in figures:
            m["inspect"] = figures[name]
            if figures[name]["reducer"] != "mean":
                notes.append(f"{log.eval.task} {name}: Inspect reduced epochs with {figures[name]['reducer']!r}; "
                             f"evalkit's value is the mean over epochs (Inspect's kept under 'inspect')")
        metrics[name] = m
    return metrics


def _info(path: Path, log, metric_map: dict) -> dict:
    spec = log.eval
    info = {"task": spec.task, "task_version": spec.task_version, "task_id": spec.task_id,
            "task_file": spec.task_file, "task_registry_name": getattr(spec, "task_registry_name", None),
            "task_args": scrub(dict(spec.task_args or {})), "dataset": _dump(spec.dataset),
            "epochs": spec.config.epochs or 1, "epochs_reducer": spec.config.epochs_reducer,
            "solver": _dump(log.plan), "scorers": [_dump(s) for s in spec.scorers or []], "status": log.status,
            "log_file": str(path), "model_usage": S.usage_of(log.stats.model_usage if log.stats else None),
            "headline": _dump(log.results.headline) if log.results and getattr(log.results, "headline", None) else None}
    if metric_map:
        info["metric_map"] = metric_map
    return info


def import_task(path: Path, log, ek_task: Optional[str], data_path: Optional[str], allow_mismatch: bool = False,
                metric_map: Optional[dict] = None):
    """(record task name, TaskEntry, rows, notes) of one log. ``metric_map`` renames metrics (Inspect's
    name -> evalkit's, so they meet an evalkit task's metrics in compare)."""
    spec = log.eval
    own_task = _own(spec).get("task") if isinstance(_own(spec).get("task"), dict) else None
    own = own_task or {}
    notes = _status_notes(path, log)
    pairing = _pairing(ek_task, data_path, own_task)
    if pairing.unreadable:
        notes.append(pairing.unreadable_note(spec.task, ek_task, "Inspect's sample ids"))
    metric_map = dict(own.get("metric_map") or metric_map or {})
    _check_metric_map(path, log, metric_map, own_task)
    rows = _rows(log, pairing, own_task, metric_map)
    what = (f"{path}: {pairing.missed} of {len(rows)} samples are no doc of evalkit {ek_task} (another task or "
            f"other data?)")
    if pairing.check(what, f"Inspect's {spec.task}", " with Inspect's sample ids", allow_mismatch, notes):
        _unpair(rows, log)
    metrics = _metrics(rows, log, metric_map, notes)
    name = own.get("name") or (ek_task if pairing.task is not None else record_task_name(spec.task))
    version = str(own.get("version") or pairing.version(name, spec.task_version))
    info = _info(path, log, metric_map)
    entry = task_entry(
        pairing, name, rows, metrics, own.get("metrics"), "inspect", info,
        version=version, description=own.get("description") or f"Inspect task {spec.task} (imported)",
        output_type=own.get("output_type") or "generate",
        config=own.get("config") or {"name": name, "version": version, "num_fewshot": None, "options": {},
                                     "epochs": info["epochs"]},
        num_fewshot=own.get("num_fewshot"), n_docs=len({r["doc_id"] for r in rows}),
        data_source=pairing.data_source() or spec.dataset.location or spec.dataset.name)
    return name, entry, rows, notes


def _own(spec) -> dict:
    """What ``evalkit export --format inspect`` wrote into the log's metadata ({} for Inspect's logs)."""
    own = (spec.metadata or {}).get(META_KEY)
    return own if isinstance(own, dict) else {}


def model_info(spec) -> ModelInfo:
    own = _own(spec)
    if isinstance(own.get("model"), dict):  # exported by evalkit: the model it described
        return ModelInfo.from_dict(own["model"])
    args = scrub({k: v for k, v in (spec.model_args or {}).items() if v is not None})
    gen = scrub(_dump(spec.model_generate_config) or {})
    identity = {"harness": "inspect", "inspect_version": (spec.packages or {}).get("inspect_ai"),
                "model": spec.model, "model_args": args, "model_generate_config": gen,
                "model_base_url": scrub(spec.model_base_url) if spec.model_base_url else None}
    provider = spec.model.split("/", 1)[0] if "/" in spec.model else ""
    return ModelInfo(spec=f"inspect:{spec.model}", name=spec.model.rsplit("/", 1)[-1],
                     backend=f"inspect {provider}".strip(),
                     args=args, identity=identity, identity_hash=content_hash(identity))


def import_log(path: Path, log, task_map: Optional[dict] = None, data_paths: Optional[dict] = None,
               label: Optional[str] = None, allow_mismatch: bool = False,
               metric_map: Optional[dict] = None) -> tuple[Run, dict, list]:
    """(run, {task: rows}, notes) of one Inspect log."""
    task_map, data_paths = dict(task_map or {}), dict(data_paths or {})
    spec = log.eval
    ek = task_map.get(spec.task) or task_map.get(record_task_name(spec.task))
    if ek is None and spec.task in registry.all_tasks():  # same name: paired when the samples are its docs
        ek, allow_mismatch = spec.task, True
    name, entry, rows, notes = import_task(path, log, ek, data_paths.get(ek) if ek else None, allow_mismatch,
                                           metric_map)
    own = _own(spec)
    gen = _dump(spec.model_generate_config) or {}
    created, done = (log.stats.started_at, log.stats.completed_at) if log.stats else (None, None)
    config = own.get("run_config") if isinstance(own.get("run_config"), dict) else {
        "tasks": [name], "limit": spec.config.limit if isinstance(spec.config.limit, int) else None,
        "seed": spec.config.seed if isinstance(getattr(spec.config, "seed", None), int) else 1234,
        "num_fewshot": None, "apply_chat_template": True, "system_prompt": None,
        "gen_overrides": {_GEN_KEYS[k]: v for k, v in gen.items() if k in _GEN_KEYS},
        "shard": None, "tags": ["inspect", *(spec.tags or [])],
        "data_paths": {name: data_paths[name]} if name in data_paths else {}, "task_options": {}, "metrics": [],
        "inspect": {"log_file": str(path), "eval_id": spec.eval_id, "run_id": spec.run_id, "created": spec.created,
                    "epochs": entry.extra["inspect"]["epochs"], "config": scrub(_dump(spec.config)),
                    "inspect_version": (spec.packages or {}).get("inspect_ai") or inspect_version()}}
    run = new_run("import", model_info(spec), config, {name: entry}, label=label,
                  timings={"total_s": _seconds(created, done)})
    return run, {name: rows}, notes


def _seconds(start, end) -> float:
    from datetime import datetime
    try:
        return max(0.0, (datetime.fromisoformat(str(end)) - datetime.fromisoformat(str(start))).total_seconds())
    except (TypeError, ValueError):
        return 0.0
