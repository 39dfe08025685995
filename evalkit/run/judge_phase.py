"""The judge phase of a run (``--judge SPEC``): after the answer phase, tasks that ask a judge model
about their answers (their judged metrics, ``evalkit.taskapi.judged``: Arena-Hard's pairwise games,
HealthBench's rubric items, ...; or their own ``Task.judge_requests``: τ²-bench's natural-language
assertions) get their requests answered by the judge's own engine, cached under the judge's
identity, and the answers reach scoring as ``RunContext.judgments``. The judge reads the same answer
scoring does: generated text split into trace and answer first (``evalkit.run.traces``). Tasks that
ask nothing are untouched; a task with judged metrics needs a judge (``check``, before any model
loads); τ²-bench scores without one."""
from __future__ import annotations

import dataclasses

from evalkit.run import traces
from evalkit.scoring.thinking import ThinkingConfig
from evalkit.taskapi import judged
from evalkit.taskapi.task import Task


class JudgeMissing(ValueError):
    pass


def check(task_runs, judge_spec, flag: str = "--judge BACKEND:MODEL", second_spec=None) -> None:
    """One line, before any model loads, when a task has judged metrics and the run no judge (or a
    second judge and no first)."""
    if second_spec and not judge_spec:
        raise JudgeMissing(f"a second judge ({second_spec}) needs a first one: name it with {flag}")
    if judge_spec:
        if not any(_asks(tr.task) for tr in task_runs):
            names = ", ".join(tr.task.name for tr in task_runs)
            raise JudgeMissing(f"--judge {judge_spec}: no task of this run asks a judge anything ({names}); the "
                               f"judged ones are those with judged metrics (arena_hard_v2, healthbench, ...) and "
                               f"tau2_* (its natural-language assertions): drop --judge or add such a task")
        return
    required = {tr.task.name: [m.name for m in judged.metrics_of(tr.task) if not m.optional] for tr in task_runs}
    need = [t for t, names in required.items() if names]
    if need:
        names = sorted({n for t in need for n in required[t]})
        raise JudgeMissing(f"task(s) {', '.join(need)} report judged metrics ({', '.join(names)}): name a judge "
                           f"model with {flag} (any model spec, e.g. vllm:smollm2-135m)")


def _asks(task) -> bool:
    return type(task).judge_requests is not Task.judge_requests or bool(judged.metrics_of(task))


def judge_requests(p, answers: dict) -> list:
    """Every task's judge requests for its docs' answers (one list for the whole run)."""
    cfg = ThinkingConfig.from_options(p.config.thinking)
    probe = traces.PrefillProbe(cfg, p.ctx.render_chat)
    out = []
    for tr in p.task_runs:
        if not _asks(tr.task):
            continue
        per_doc = [[answers[r.key()] for r in reqs] for reqs in tr.requests]
        if tr.task.output_type == "generate":
            prefilled = probe(tr.requests) if cfg.prefilled is None else None
            per_doc, _ = traces.split_answers(per_doc, cfg, prefilled)
        for doc, responses in zip(tr.docs, per_doc):
            out += tr.task.judge_requests(doc, responses, p.ctx)
    return out


def run(p, answers: dict, judge_backend, cache, progress=True, second: bool = False) -> dict:
    """Answer the run's judge requests with ``judge_backend``; sets ``p.ctx.judgments`` (with ``second``:
    ``p.ctx.second_judgments``, a second judge asked the same) and returns the judge engine's counters
    (empty when no task asked)."""
    from evalkit.run.engine import Engine
    requests = judge_requests(p, answers)
    if not requests:
        return {}
    engine = Engine(judge_backend, cache, progress=progress)
    got = engine.run(requests)
    p.ctx = dataclasses.replace(p.ctx, **{"second_judgments" if second else "judgments": got})
    return dict(engine.stats)
