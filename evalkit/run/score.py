"""Phase 3 of a run, ``score``: each task scores its docs from their answers; the result is the
task's ``Sample``s, nothing aggregated yet (that is ``evalkit.run.post_process``).

Generated text is split into reasoning trace and answer first (``evalkit.run.traces``), so tasks
score the answer, and each sample records what the split found. A task's judged metrics
(``evalkit.taskapi.judged``) then read the judge's replies to the same answers. ``evaluate``, ``parity`` and
``rescore`` (saved predictions, no answer phase) all score through ``score_docs``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from evalkit.run import traces
from evalkit.scoring.thinking import ThinkingConfig
from evalkit.taskapi import judged
from evalkit.taskapi.task import RunContext, Sample, Task


@dataclass
class TaskScores:
    """One task's scored samples, with each doc's position in the unsharded doc list."""

    task: Task
    samples: list[Sample]
    indices: Optional[list[int]] = None
    too_long: Optional[dict] = field(default=None)  # {doc position: info}: prompts over the context


def score_docs(task: Task, docs: Sequence, responses: Sequence[list], ctx: RunContext, thinking: dict,
               prefilled: Optional[bool] = None, count_tokens: Optional[Callable] = None) -> list[Sample]:
    """The task's samples from each doc's responses; generated text is split into trace and answer
    first (``thinking``: the run's trace options) and the split is recorded in each sample."""
    if task.output_type != "generate":
        return judged.apply(task, docs, responses, task.score_all(docs, responses, ctx), ctx.judgments,
                             ctx.second_judgments)
    cfg = ThinkingConfig.from_options(thinking)
    responses, seps = traces.split_answers(list(responses), cfg, prefilled)
    samples = judged.apply(task, docs, responses, task.score_all(docs, responses, ctx), ctx.judgments,
                             ctx.second_judgments)
    traces.annotate(samples, seps, count_tokens)
    return samples


def score(p, answers: dict, count_tokens: Optional[Callable] = None) -> list[TaskScores]:
    """Every task of the plan ``p`` scored from the answers of its requests (by request key).
    ``count_tokens`` (text -> ids) gives the samples' trace and answer token counts."""
    cfg = ThinkingConfig.from_options(p.config.thinking)
    probe = traces.PrefillProbe(cfg, p.ctx.render_chat)
    out = []
    for tr in p.task_runs:
        per_doc = [[answers[r.key()] for r in reqs] for reqs in tr.requests]
        prefilled = probe(tr.requests) if tr.task.output_type == "generate" and cfg.prefilled is None else None
        samples = score_docs(tr.task, tr.docs, per_doc, p.ctx, p.config.thinking, prefilled, count_tokens)
        out.append(TaskScores(tr.task, samples, list(tr.indices), p.too_long.get(tr.task.name)))
    return out
