"""K samples of one prompt as K requests (``--repeats K``, ``--gen-kwargs n=K``).

A generate request asking for n > 1 completions is answered as n requests of one completion each:
sample i keeps the request's parameters with ``n=1`` and its own seed, derived from the request's
seed (itself derived from the run seed, the task and the item: ``evalkit.taskapi.task.run_params``)
and the sample index; sample 0 keeps the request's seed, so it is the very request a run without
repeats makes. Each sample is cached on its own, so:

- the samples never depend on batch size, ``--limit``, sharding or resuming (vLLM and HF seed each
  request alone);
- a rerun with a larger K computes only the new samples (K=4 then K=8 reuses the first 4), and a
  run with K samples reuses the single-sample run's answers as sample 0.

The engine splits before the cache lookup and joins the answers back, so tasks still see one
request answered with n completions, in sample order.

Repeats have three homes, one per layer: ``evalkit.scoring.repeats`` (the maths: avg@K, pass@k,
pass^k, maj@K and their standard errors), ``evalkit.taskapi.repeats`` (a task's K completions scored
and its repeat metrics declared) and ``evalkit.run.repeats_split`` (the K requests the engine sends).
"""
from __future__ import annotations

from dataclasses import replace

from evalkit.scoring.stats import derive_seed
from evalkit.taskapi.requests import GenerateRequest, GenParams


def sample_params(p: GenParams, i: int) -> GenParams:
    """The parameters of sample ``i`` of a request with parameters ``p``."""
    if i == 0 or p.seed is None:
        return replace(p, n=1)
    return replace(p, n=1, seed=derive_seed(p.seed, "repeat", i) % (2 ** 31))


def split(requests) -> tuple[list, dict]:
    """(requests with every n > 1 generate request replaced by its n samples, {request key: sample keys})."""
    flat, groups = [], {}
    for r in requests:
        if isinstance(r, GenerateRequest) and r.params.n > 1:
            subs = [replace(r, params=sample_params(r.params, i)) for i in range(r.params.n)]
            groups[r.key()] = [s.key() for s in subs]
            flat.extend(subs)
        else:
            flat.append(r)
    return flat, groups


def join(answers: dict, groups: dict) -> dict:
    """Add each split request's answer: its samples' completions in sample order."""
    for key, subs in groups.items():
        if all(s in answers for s in subs):
            answers[key] = [c for s in subs for c in answers[s]]
    return answers
