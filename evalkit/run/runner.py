"""One evaluation run, in three phases that callers compose:

1. ``plan``: tasks, their docs (the first ``limit``, this shard's share), the ``RunContext`` and
   every doc's requests. Data errors surface here, before any model is loaded.
2. ``answer``: the engine answers all requests of the run at once (deduped, cached, batched).
3. ``score``: each task scores its docs from the answers, the run appends its extra metrics, and
   ``score_task`` aggregates them into the task's record entry and sample rows.

``evaluate`` is plan → answer → score → record; ``parity.collect`` stops before the record,
``scoring.rescore`` scores saved predictions (no answer phase), ``merge`` re-aggregates shards.
"""
from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

from evalkit.taskapi import registry
from evalkit.run import checks as run_checks
from evalkit.backends.base import Backend
from evalkit.run.engine import Engine
from evalkit.records import ModelInfo, TaskEntry, new_run, samples_filename, write_run
from evalkit.run.config import RunConfig
from evalkit.taskapi.task import RunContext, Sample, Task, content_hash

log = logging.getLogger(__name__)

__all__ = ["RunConfig", "Plan", "TaskRun", "plan", "answer", "score", "score_task", "evaluate", "load_tasks",
           "select_docs", "shard_of"]


@dataclass
class TaskRun:
    task: Task
    docs: list
    requests: list  # per doc, list of requests
    indices: list = field(default_factory=list)  # each doc's position in the unsharded doc list


@dataclass
class Plan:
    config: RunConfig
    ctx: RunContext
    task_runs: list
    too_long: dict = field(default_factory=dict)  # {task: {doc position: info}}: prompts over the context

    def all_requests(self) -> list:
        return [r for tr in self.task_runs for reqs in tr.requests for r in reqs]


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


def task_limit(limit, n_docs: int) -> Optional[int]:
    """The number of docs ``limit`` takes of a task: a count, or a fraction below 1 of the task's
    docs rounded up (lm-eval's ``--limit 0.1``)."""
    if limit is None:
        return None
    if isinstance(limit, float) and limit < 1:
        return math.ceil(n_docs * limit)
    return int(limit)


def make_task(name: str, config: RunConfig) -> Task:
    cls = registry.get_task_class(name)
    task = cls(data_path=config.data_paths.get(name), **config.task_options.get(name, {}))
    task.fewshot_data_path = config.fewshot_paths.get(name)
    return task


def load_tasks(config: RunConfig) -> list[TaskRun]:
    """Instantiate tasks and load their docs (before any model is loaded, so data errors come first)."""
    runs = []
    for name in config.tasks:
        task = make_task(name, config)
        run_checks.check_fewshot_source(task, config.num_fewshot)
        docs = task.eval_docs()
        # zero docs is an error for the evaluation as a whole; one shard may hold none of a task's
        limit = task_limit(config.limit, len(docs))
        run_checks.require_docs(task, docs[:limit] if limit is not None else docs, config)
        picked = select_docs(docs, limit, config.shard)
        runs.append(TaskRun(task, [d for _, d in picked], [], [k for k, _ in picked]))
    return runs


# ---- phase 1: plan ----------------------------------------------------------------------------
def plan(config: RunConfig, backend=None, task_runs: Optional[list[TaskRun]] = None) -> Plan:
    """Docs and requests of every task; ``backend`` renders chat templates when the run asks for them."""
    ctx = config.context(render_chat=backend.apply_chat_template if backend is not None else None)
    task_runs = task_runs if task_runs is not None else load_tasks(config)
    for tr in task_runs:
        tr.requests = [tr.task.requests(d, ctx) for d in tr.docs]
    return Plan(config, ctx, task_runs)


# ---- phase 2: answer --------------------------------------------------------------------------
def answer(p: Plan, backend, cache, progress=True) -> tuple[dict, dict]:
    """(answers by request key, engine counters)."""
    engine = Engine(backend, cache, progress=progress)
    answers = engine.run(p.all_requests())
    return answers, dict(engine.stats)


# ---- phase 3: score ---------------------------------------------------------------------------
def score_task(task: Task, samples: Sequence[Sample], config: RunConfig, indices: Optional[Sequence[int]] = None,
               ) -> tuple[TaskEntry, list[dict]]:
    """Aggregate one task's scored samples into its record entry and sample rows. Appends the run's
    extra metrics (``config.metrics``) to generation tasks first; the samples given are not changed."""
    samples = list(samples)
    appended, info, run_declared = {}, {}, ()
    if config.metrics and task.output_type == "generate":
        from evalkit.scoring import hf_evaluate
        res = hf_evaluate.compute(task, samples, config.metrics, config.seed)
        samples = [dataclasses.replace(s, metrics={**s.metrics, **extra}) for s, extra in zip(samples, res.per_sample)]
        appended, info, run_declared = res.corpus, res.info, res.declared
    metrics = {**task.aggregate(samples, config.seed, run_declared), **appended}
    rows = [s.to_dict() for s in samples]
    if indices is not None:
        for row, k in zip(rows, indices):
            row["doc_index"] = k
    extra = dict(task.run_extra(samples))
    if info:
        extra["evaluate"] = info
    entry = TaskEntry(
        version=task.version, description=task.description, output_type=task.output_type,
        config=task.config_fingerprint(),
        num_fewshot=task.num_fewshot if config.num_fewshot is None else config.num_fewshot,
        n_docs=len(samples),
        dataset_fingerprint=content_hash(sorted((s.doc_id, s.doc_hash) for s in samples)),
        prompt_hash=content_hash([r["prompt_hash"] for r in rows]),
        data_source=config.data_paths.get(task.name) or task.dataset.hub_path,
        metrics={k: v.to_dict() for k, v in metrics.items()},
        breakdowns={g: {k: v.to_dict() for k, v in ms.items()} for g, ms in task.breakdowns(samples).items()},
        samples_file=samples_filename(task.name), extra=extra, declared_metrics=task.declared_metrics(run_declared))
    if task.output_type == "generate":
        from evalkit.rl.version import verifier_hash  # parity certificate with evalkit.rl's rewards
        entry.verifier_hash = verifier_hash(task.name)
        from evalkit.rl.diagnostics import attach_group_figures  # G > 1 responses per item: GRPO figures
        attach_group_figures(task.name, entry, rows, config)
        from evalkit.scoring.budgets import task_budget  # from the sample rows: a cached or merged run reports the same
        entry.budget = task_budget(rows)
    return entry, rows


def score(p: Plan, answers: dict, count_tokens=None) -> tuple[dict, dict]:
    """({task: TaskEntry}, {task: sample rows}) from the answers of the plan's requests. Generated
    text is split into reasoning trace and answer first (``evalkit.run.traces``); tasks score the answer.
    ``count_tokens`` (text -> ids) gives the samples' trace and answer token counts."""
    from evalkit.run import traces
    from evalkit.scoring.thinking import ThinkingConfig
    cfg = ThinkingConfig.from_options(p.config.thinking)
    probe = traces.PrefillProbe(cfg, p.ctx.render_chat)
    entries, rows = {}, {}
    for tr in p.task_runs:
        per_doc = [[answers[r.key()] for r in reqs] for reqs in tr.requests]
        if tr.task.output_type == "generate":
            per_doc, seps = traces.split_answers(per_doc, cfg, probe(tr.requests) if cfg.prefilled is None else None)
        samples = tr.task.score_all(tr.docs, per_doc, p.ctx)
        if tr.task.output_type == "generate":
            traces.annotate(samples, seps, count_tokens)
        entries[tr.task.name], rows[tr.task.name] = score_task(tr.task, samples, p.config, tr.indices)
        run_checks.record_truncation(entries[tr.task.name], rows[tr.task.name], p.too_long.get(tr.task.name))
    return entries, rows


# ---- the whole run ----------------------------------------------------------------------------
def _token_counter(backend):
    """Token ids of a text by the backend's tokenizer (``text_tokenizer()`` where a backend has one
    that needs no engine, e.g. vllm), loaded on first use; None when it has no tokenizer."""
    if type(backend).encode is Backend.encode and not hasattr(backend, "text_tokenizer"):
        return None

    def count(text: str) -> list:
        tok = backend.text_tokenizer() if hasattr(backend, "text_tokenizer") else getattr(backend, "tokenizer", None)
        if tok is None:  # openai backend in text mode
            raise NotImplementedError("no tokenizer")
        return tok.encode(text, add_special_tokens=False)
    return count


def model_info(backend, model_spec: str = "", model_args: Optional[dict] = None) -> ModelInfo:
    return ModelInfo(spec=model_spec, name=backend.display_name, backend=backend.name, args=model_args or {},
                     identity=backend.identity(), identity_hash=backend.identity_hash())


def evaluate(backend, config: RunConfig, cache, output_dir: Optional[str] = "results",
             model_spec: str = "", model_args: Optional[dict] = None, progress=True,
             task_runs: Optional[list[TaskRun]] = None, reward_backend=None) -> dict:
    """Run every task of ``config`` on ``backend``; writes a run record when ``output_dir`` is set.
    ``task_runs`` (from ``load_tasks``) lets a caller load and validate data before the model.
    ``reward_backend`` (a reward model) adds best-of-N figures (``evalkit.run.reward_phase``).
    Returns ``{"run": the record as a dict, "samples": {task: rows}}``."""
    t0 = time.time()
    p = plan(config, backend, task_runs)
    t_prep = time.time()
    answers, engine_stats = answer(p, backend, cache, progress)
    # after the answers, so a cached rerun needs no tokenizer: counted, warned, recorded per sample
    p.too_long = run_checks.prompts_over_context(p.task_runs, backend)
    t_model = time.time()
    entries, rows = score(p, answers, _token_counter(backend))
    reward_model = None
    if reward_backend is not None:
        from evalkit.run.reward_phase import add_best_of_n
        reward_model = add_best_of_n(p, entries, rows, reward_backend, cache, progress)
    run = new_run("evaluation", model_info(backend, model_spec, model_args), config.to_record(), entries,
                  engine=engine_stats,
                  # backend counters (vllm/openai: share of completions that hit max_tokens, prefix-cache hits)
                  backend_stats=backend.run_stats(),
                  timings={"prepare_s": round(t_prep - t0, 3), "model_s": round(t_model - t_prep, 3),
                           "score_s": round(time.time() - t_model, 3), "total_s": round(time.time() - t0, 3)},
                  reward_model=reward_model)
    if output_dir:
        run.path = str(write_run(output_dir, run, rows))
    return {"run": run.to_dict(), "samples": rows}
