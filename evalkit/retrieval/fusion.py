"""Hybrid fusion of two or more runs ({query: {doc: score}}).

- ``rrf``: reciprocal rank fusion, ``sum_r 1 / (k + rank_r(d))`` with k = 60 (Cormack et al. 2009);
  ranks are 1-based in trec tie order; a doc absent from a run adds nothing.
- ``weighted``: per query, each run's scores min-max normalised to [0, 1] (all equal -> 1), then
  ``sum_r w_r * norm_r(d)``; a doc absent from a run adds 0.
"""
from __future__ import annotations

from typing import Optional, Sequence

from evalkit.retrieval.measures import rank


def rrf(runs: Sequence[dict], k: int = 60) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for run in runs:
        for q, docs in run.items():
            acc = out.setdefault(q, {})
            for r, d in enumerate(rank(docs), 1):
                acc[d] = acc.get(d, 0.0) + 1.0 / (k + r)
    return out


def _minmax(docs: dict) -> dict:
    if not docs:
        return {}
    lo, hi = min(docs.values()), max(docs.values())
    return {d: (s - lo) / (hi - lo) if hi > lo else 1.0 for d, s in docs.items()}


def weighted(runs: Sequence[dict], weights: Optional[Sequence[float]] = None) -> dict[str, dict[str, float]]:
    weights = list(weights) if weights is not None else [1.0 / len(runs)] * len(runs)
    if len(weights) != len(runs):
        raise ValueError(f"weighted fusion: {len(weights)} weights for {len(runs)} runs")
    out: dict[str, dict[str, float]] = {}
    for w, run in zip(weights, runs):
        for q, docs in run.items():
            acc = out.setdefault(q, {})
            for d, s in _minmax(docs).items():
                acc[d] = acc.get(d, 0.0) + w * s
    return out
