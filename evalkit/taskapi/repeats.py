"""Scoring a generation task's K completions per problem (``--repeats K`` / ``--gen-kwargs n=K``).

Every completion is scored on its own through the task's ``score_batch`` (so worker pools and
answer checkers are the task's own), then each problem's sample row gets

- the task's metrics as the mean over its K completions (``exact_match`` is then avg@K of it);
- the repeat metrics of the task's ``repeat_metric`` (default: its first declared sample metric;
  a completion is right when that value is >= 0.5): avg@K, pass@k, pass^k and, when the task
  extracts answers to vote on (``votes``, see ``voting``), maj@K (``evalkit.scoring.repeats``);
- ``extra["repeats"]``: K, the success count c, each completion's verdict, extracted answer and metrics.

The K completions are generated as one request per sample, its seed derived from the run seed, the
item and the sample index, each cached on its own.

Repeats have three homes, one per layer: ``evalkit.scoring.repeats`` (the maths: avg@K, pass@k,
pass^k, maj@K and their standard errors), ``evalkit.taskapi.repeats`` (a task's K completions scored
and its repeat metrics declared) and ``evalkit.run.repeats_split`` (the K requests the engine sends).
"""
from __future__ import annotations

from typing import Optional, Sequence

from evalkit.scoring import repeats as rp
from evalkit.scoring.metric import Metric
from evalkit.taskapi.items import Scored

SUCCESS = 0.5


def correctness_metric(task, first: dict) -> str:
    """The per-completion metric whose value decides right/wrong."""
    name = getattr(task, "repeat_metric", None)
    if name:
        if name not in first:
            raise ValueError(f"task {task.name}: repeat_metric {name!r} is not among its sample metrics "
                             f"({', '.join(first) or 'none'})")
        return name
    for d in task.metrics or ():
        if isinstance(d, Metric) and d.level == "sample" and d.higher_is_better and d.name in first:
            return d.name
    if not first:
        raise ValueError(f"task {task.name}: repeats need a per-sample metric; the task scored none")
    return next(iter(first))


def _as_scored(x) -> Scored:
    return x if isinstance(x, Scored) else Scored(dict(x))


def score_repeats(task, docs: Sequence, texts: Sequence[list[str]], ctx) -> list[Scored]:
    """One ``Scored`` per doc from its K completions, each scored alone by ``task.score_batch``."""
    flat_docs = [d for d, ts in zip(docs, texts) for _ in ts]
    flat = [_as_scored(s) for s in task.score_batch(flat_docs, [[t] for ts in texts for t in ts], ctx)]
    name = correctness_metric(task, flat[0].metrics) if flat else None
    kind = getattr(task, "vote_kind", None)
    if kind:  # answers the task extracts as dicts (GSM8K, MATH): the part a vote compares
        from evalkit.scoring.votes import vote_of
        ballots, votes = [vote_of(kind, s.extracted) for s in flat], True
    else:
        ballots, votes = None, voting(task, [s.extracted for s in flat])
    out, i = [], 0
    for d, ts in zip(docs, texts):
        per = flat[i:i + len(ts)]
        out.append(problem_scored(per, name, votes, ballots[i:i + len(ts)] if ballots else None))
        i += len(ts)
    return out


def voting(task, answers: list) -> bool:
    """Whether maj@K is reported: the task's ``votes`` (True/False), else whether its extracted
    answers are plain values (not lists or dicts) and at least one sample of the run has one."""
    declared = getattr(task, "votes", None)
    if declared is not None:
        return bool(declared)
    plain = all(a is None or not isinstance(a, (list, dict, tuple)) for a in answers)
    return plain and any(a is not None for a in answers)


def problem_scored(per: list[Scored], name: Optional[str], votable: bool = True,
                   ballots: Optional[list] = None) -> Scored:
    """One problem's row: mean task metrics, the repeat metrics of ``name``, and per-completion details;
    ``ballots``: what each completion votes for in maj@K (default: its extracted answer)."""
    if not per:
        return Scored({}, extracted=[], extra={"repeats": {"k": 0, "n_correct": 0}})
    names = list(per[0].metrics)
    metrics = {}
    for m in names:
        vals = [s.metrics.get(m) for s in per if s.metrics.get(m) is not None]
        if vals:
            metrics[m] = sum(float(v) for v in vals) / len(vals)
    correct = [float(s.metrics.get(name) or 0.0) >= SUCCESS for s in per]
    answers = [s.extracted for s in per]
    ballots = answers if ballots is None else ballots
    metrics.update(rp.problem_metrics(correct, ballots if votable else None))
    first = per[0]
    extra = {k: v for k, v in first.extra.items()}
    extra["repeats"] = {"k": len(per), "n_correct": sum(correct), "metric": name,
                        "correct": [int(c) for c in correct],
                        "majority_index": rp.majority(ballots) if votable else None,
                        "sample_metrics": [s.metrics for s in per]}
    return Scored(metrics, extracted=answers, extra=extra, target=first.target)


def made_here(name: str, k: int) -> bool:
    """Whether ``name`` is a figure this module makes for a problem with ``k`` samples."""
    if not rp.is_repeat_metric(name):
        return False
    head, _, tail = name.replace("^", "@", 1).partition("@")
    j = int(tail)
    return j == k if head in ("avg", "maj") else 1 <= j <= k


def declarations(samples: Sequence, declared_names: set) -> tuple:
    """Metric declarations for the repeat figures these samples carry (rows scored with K samples,
    ``extra["repeats"]["k"]``) that the task does not declare itself; not required (runs with one
    sample carry none). Any other undeclared name stays the error it is."""
    names = []
    for s in samples:
        rep = (s.extra if hasattr(s, "extra") else s.get("extra") or {}).get("repeats")
        k = rep.get("k") if isinstance(rep, dict) else None
        if not k:
            continue
        for n in (s.metrics if hasattr(s, "metrics") else s.get("metrics", {})):
            if n not in declared_names and n not in names and made_here(n, k):
                names.append(n)
    return tuple(Metric(n, required=False) for n in names)


def run_summary(samples: Sequence) -> dict:
    """``{"repeats": ...}`` for the record's task ``extra`` when the samples hold K > 1 completions:
    K, problems, samples, successes, and the naive vs clustered standard error of avg@K."""
    per = [s.extra["repeats"].get("correct") for s in samples
           if isinstance(getattr(s, "extra", None), dict) and isinstance(s.extra.get("repeats"), dict)]
    per = [p for p in per if p]
    if not per or max(len(p) for p in per) < 2:
        return {}
    out = rp.summary(per)
    out["metric"] = next((s.extra["repeats"].get("metric") for s in samples if s.extra.get("repeats")), None)
    return {"repeats": out}
