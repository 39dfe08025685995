"""The judge phase of a run (``--judge SPEC``): after the answer phase, tasks that ask a judge model
about their answers (``Task.judge_requests``: τ²-bench's natural-language assertions) get their
requests answered by the judge's own engine, cached under the judge's identity, and the answers
reach scoring as ``RunContext.judgments``. Tasks that ask nothing are untouched; a run without a
judge scores them without judgments."""
from __future__ import annotations

import dataclasses

from evalkit.taskapi.task import Task


def judge_requests(p, answers: dict) -> list:
    """Every task's judge requests for its docs' answers (one list for the whole run)."""
    out = []
    for tr in p.task_runs:
        if type(tr.task).judge_requests is Task.judge_requests:
            continue
        for doc, reqs in zip(tr.docs, tr.requests):
            out += tr.task.judge_requests(doc, [answers[r.key()] for r in reqs], p.ctx)
    return out


def run(p, answers: dict, judge_backend, cache, progress=True) -> dict:
    """Answer the run's judge requests with ``judge_backend``; sets ``p.ctx.judgments`` and returns the
    judge engine's counters (empty when no task asked)."""
    from evalkit.run.engine import Engine
    requests = judge_requests(p, answers)
    if not requests:
        return {}
    engine = Engine(judge_backend, cache, progress=progress)
    p.ctx = dataclasses.replace(p.ctx, judgments=engine.run(requests))
    return dict(engine.stats)
