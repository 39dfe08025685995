"""Phase 4 of a run, ``post_process``: a task's scored samples become its record entry and sample
rows. Every path that produces a task entry runs the same steps, in this order: ``evaluate``,
``parity``, ``rescore`` (saved predictions), ``merge`` (shards) and the retrieval tasks.

1. ``appended_metrics``: the run's extra metrics (``--metric evaluate:NAME``) add per-sample values
   to generation samples (the samples given are not changed) and corpus figures;
2. ``task_entry``: the task's declared metrics with their CIs, breakdowns, the task's own figures,
   the dataset and prompt hashes: the ``TaskEntry`` and the sample rows;
3. generation figures, from the sample rows only (a cached, merged or rescored run reports the same):
   the verifier certificate (``evalkit.rl``'s parity hash), GRPO group figures when a doc has several
   completions, budgets (``evalkit.scoring.budgets``);
4. truncation: prompts longer than the model's context, counted per task and marked per sample;
5. with a reward model, best-of-N over the completions (``evalkit.run.reward_phase``), run-wide.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from evalkit.records import TaskEntry, hashes, samples_filename
from evalkit.run import checks as run_checks
from evalkit.run.config import RunConfig
from evalkit.taskapi import judged
from evalkit.taskapi.task import Sample, Task


@dataclass
class Appended:
    """What the run's extra metrics added: corpus figures, how they were computed, their declarations."""

    corpus: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    declared: tuple = ()


def appended_metrics(task: Task, samples: list[Sample], config: RunConfig) -> tuple[list[Sample], Appended]:
    """(samples with the appended per-sample values, what was appended)."""
    if not config.metrics or task.output_type != "generate":
        return samples, Appended()
    from evalkit.scoring import hf_evaluate
    res = hf_evaluate.compute(task, samples, config.metrics, config.seed)
    samples = [dataclasses.replace(s, metrics={**s.metrics, **extra}) for s, extra in zip(samples, res.per_sample)]
    return samples, Appended(res.corpus, res.info, tuple(res.declared))


def task_entry(task: Task, samples: list[Sample], config: RunConfig, indices: Optional[Sequence[int]] = None,
               appended: Optional[Appended] = None) -> tuple[TaskEntry, list[dict]]:
    """The task's record entry and sample rows: its declared metrics with CIs (checked against what
    the samples carry), breakdowns, extra figures, hashes, and the declarations themselves."""
    appended = appended or Appended()
    metrics = {**task.aggregate(samples, config.seed, appended.declared), **appended.corpus}
    rows = [s.to_dict() for s in samples]
    if indices is not None:
        for row, k in zip(rows, indices):
            row["doc_index"] = k
    extra = dict(task.run_extra(samples))
    figures = judged.reliability(task, samples)  # the judge's reliability beside the judged figures
    if figures:  # (none: no judged metric, or only optional ones and no judge)
        extra["judge"] = figures
    if appended.info:
        extra["evaluate"] = appended.info
    entry = entry_of(task, samples, rows, metrics, task.breakdowns(samples), extra,
                     num_fewshot=task.num_fewshot if config.num_fewshot is None else config.num_fewshot,
                     data_source=config.data_paths.get(task.name) or task.dataset.hub_path,
                     declared=appended.declared)
    return entry, rows


def entry_of(task: Task, samples: Sequence[Sample], rows: list[dict], metrics: dict, breakdowns: dict, extra: dict,
             num_fewshot: int, data_source: Optional[str], declared: Sequence = (), output_type: Optional[str] = None,
             config: Optional[dict] = None) -> TaskEntry:
    """A task's ``TaskEntry`` from its samples, rows and figures: the one place an entry's hashes,
    metric values and declarations are filled in (evaluations, rescoring, merges and the judges)."""
    return TaskEntry(
        version=task.version, description=task.description, output_type=output_type or task.output_type,
        config=config if config is not None else task.config_fingerprint(), num_fewshot=num_fewshot,
        n_docs=len(samples),
        dataset_fingerprint=hashes.dataset_fingerprint(rows), prompt_hash=hashes.prompt_hash(rows),
        data_source=data_source,
        metrics={k: v.to_dict() for k, v in metrics.items()},
        breakdowns={g: {k: v.to_dict() for k, v in ms.items()} for g, ms in breakdowns.items()},
        samples_file=samples_filename(task.name), extra=extra, declared_metrics=task.declared_metrics(declared))


def verifier_certificate(task: Task, entry: TaskEntry, rows: list[dict], config: RunConfig) -> None:
    from evalkit.rl.version import verifier_hash  # parity certificate with evalkit.rl's rewards
    entry.verifier_hash = verifier_hash(task.name)


def group_figures(task: Task, entry: TaskEntry, rows: list[dict], config: RunConfig) -> None:
    from evalkit.rl.diagnostics import attach_group_figures  # G > 1 responses per item: GRPO figures
    attach_group_figures(task.name, entry, rows, config)


def budgets(task: Task, entry: TaskEntry, rows: list[dict], config: RunConfig) -> None:
    from evalkit.scoring.budgets import task_budget
    entry.budget = task_budget(rows, task.higher_is_better_of)


#: step 3, for generation tasks: (task, entry, rows, config) -> None, each writing into the entry
GENERATION_STEPS: tuple[Callable, ...] = (verifier_certificate, group_figures, budgets)


def finish_task(task: Task, samples: Sequence[Sample], config: RunConfig, indices: Optional[Sequence[int]] = None,
                too_long: Optional[dict] = None) -> tuple[TaskEntry, list[dict]]:
    """Steps 1-4 for one task: its record entry and sample rows from its scored samples."""
    samples, appended = appended_metrics(task, list(samples), config)
    entry, rows = task_entry(task, samples, config, indices, appended)
    if task.output_type == "generate":
        for step in GENERATION_STEPS:
            step(task, entry, rows, config)
    run_checks.record_truncation(entry, rows, too_long)
    return entry, rows


def saved_best_of_n(entry: TaskEntry, rows: list[dict], saved_rows: list[dict], saved_info: Optional[dict],
                    config: RunConfig, task: str) -> None:
    """Step 5 from saved sample rows (a merge of shards of a ``--reward-model`` run): the best-of-N
    figures again over every problem's saved verdicts and rewards."""
    if not saved_rows or not all(isinstance(row.get("best_of_n"), dict) for row in saved_rows):
        return
    from evalkit.scoring import best_of_n
    info = saved_info or {}
    best_of_n.attach(entry, rows, [row["best_of_n"] for row in saved_rows], config.seed, task,
                     **{k: info[k] for k in ("verifier_metric", "reward_prompt", "step_agg") if k in info})


def post_process(p, scored: list, reward=None) -> tuple[dict, dict, Optional[dict]]:
    """({task: TaskEntry}, {task: sample rows}, the record's reward_model block or None) from the
    score phase's ``TaskScores`` of plan ``p``. ``reward``: (reward backend, cache, progress) to
    judge every completion of the generation tasks (step 5)."""
    entries, rows = {}, {}
    for ts in scored:
        entries[ts.task.name], rows[ts.task.name] = finish_task(ts.task, ts.samples, p.config, ts.indices,
                                                                ts.too_long)
    reward_model = None
    if reward is not None:
        from evalkit.run.reward_phase import add_best_of_n
        backend, cache, progress = reward
        reward_model = add_best_of_n(p, entries, rows, backend, cache, progress)
    return entries, rows, reward_model
