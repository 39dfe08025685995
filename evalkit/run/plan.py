"""Phase 1 of a run, ``plan``: the tasks, their docs (the first ``limit``, this shard's share), the
``RunContext`` and every doc's requests. Data errors surface here, before any model is loaded."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Optional

from evalkit.run import checks as run_checks
from evalkit.backends.base import Backend
from evalkit.run.config import RunConfig
from evalkit.taskapi import registry
from evalkit.taskapi.task import RunContext, Task, limit_count


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
    """The number of docs ``limit`` takes of a task (``evalkit.taskapi.task.limit_count``)."""
    return limit_count(limit, n_docs)


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
        limited = task.docs_within_limit(docs, config.limit)
        run_checks.require_docs(task, limited, config)
        picked = select_docs(limited, None, config.shard)
        run_checks.check_tool_environment(task, [d for _, d in picked])
        runs.append(TaskRun(task, [d for _, d in picked], [], [k for k, _ in picked]))
    return runs


def plan(config: RunConfig, backend=None, task_runs: Optional[list[TaskRun]] = None) -> Plan:
    """Docs and requests of every task; ``backend`` renders chat templates when the run asks for them
    and tokenizes for tasks that size prompts in tokens."""
    ctx = config.context(render_chat=backend.apply_chat_template if backend is not None else None,
                         tokenize=token_counter(backend) if backend is not None else None,
                         max_length=run_checks._max_length(backend) if backend is not None else None)
    task_runs = task_runs if task_runs is not None else load_tasks(config)
    for tr in task_runs:
        tr.requests = [tr.task.requests(d, ctx) for d in tr.docs]
    return Plan(config, ctx, task_runs)


def token_counter(backend):
    """Token ids of a text by the backend's tokenizer (``text_tokenizer()`` where a backend has one
    that needs no engine, e.g. vllm), loaded on first use; None when it has no tokenizer."""
    if getattr(type(backend), "encode", Backend.encode) is Backend.encode and not hasattr(backend, "text_tokenizer"):
        return None
    if not hasattr(backend, "text_tokenizer") and getattr(backend, "tokenizer", True) is None:
        return None  # an openai: server in text mode (no tokenizer= given or found)

    def count(text: str) -> list:
        tok = backend.text_tokenizer() if hasattr(backend, "text_tokenizer") else getattr(backend, "tokenizer", None)
        if tok is None:
            raise ValueError("the model has no tokenizer here; give one with --model-args tokenizer=DIR_OR_HUB_ID")
        return tok.encode(text, add_special_tokens=False)
    return count
