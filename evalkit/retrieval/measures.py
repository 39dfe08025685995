"""Per-query retrieval measures, trec_eval-exact under its conventions (see ``conventions``).

``evaluate(run, qrels, ks, conv)`` returns ``{query id: {measure: value}}`` over the queries the
conventions count; the mean of a column is the reported figure, and the per-query values become
the samples (so every measure gets a CI and ``evalkit compare`` pairs two retrievers query by query).

Measures (``@k`` for every cutoff): ``hit@k`` (trec_eval ``success_k``), ``mrr@k`` (reciprocal rank
of the first relevant doc within k; ``recip_rank`` has no cutoff, as trec_eval), ``ndcg@k``
(``ndcg_cut_k``; ``ndcg`` uncut), ``recall@k``, ``P@k`` (divides by k even when fewer docs came back),
``map`` and ``map@k`` (``map_cut_k``: divided by all relevant docs of the query).
"""
from __future__ import annotations

import math
from typing import Mapping, Optional, Sequence

from evalkit.retrieval.conventions import DEFAULT_KS, Conventions

Run = Mapping[str, Mapping[str, float]]      # query id -> {doc id: score}
Qrels = Mapping[str, Mapping[str, int]]      # query id -> {doc id: grade}


def measure_names(ks: Sequence[int] = DEFAULT_KS) -> list[str]:
    names = []
    for fam in ("hit", "mrr", "ndcg", "recall", "P", "map"):
        names.extend(f"{fam}@{k}" for k in ks)
    return names + ["ndcg", "map", "recip_rank"]


def rank(scores: Mapping[str, float], ties: str = "trec") -> list[str]:
    """Doc ids best first. ``trec``: score descending, then doc id descending (trec_eval's qsort
    comparator); ``input``: equal scores keep the order of ``scores`` (stable sort)."""
    if ties == "trec":
        return [d for d, _ in sorted(scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)]
    return [d for d, _ in sorted(scores.items(), key=lambda kv: -kv[1])]


def _gain(grade: float, kind: str) -> float:
    if grade <= 0:
        return 0.0
    return float(grade) if kind == "linear" else 2.0 ** grade - 1.0


def _dcg(gains: Sequence[float], k: Optional[int]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains[:k] if k else gains) if g)


def query_measures(ranked: Sequence[str], judged: Mapping[str, int], ks: Sequence[int] = DEFAULT_KS,
                   conv: Conventions = Conventions()) -> dict[str, float]:
    """All measures of one query from its ranked doc ids and its qrels."""
    thr = conv.rel_threshold
    grades = [judged.get(d, 0) for d in ranked]
    rel = [g >= thr for g in grades]
    num_rel = sum(1 for g in judged.values() if g >= thr)
    first = next((i for i, r in enumerate(rel) if r), None)          # 0-based rank of the first relevant
    gains = [_gain(g, conv.gain) for g in grades]
    ideal = sorted((_gain(g, conv.gain) for g in judged.values()), reverse=True)
    prec_sum, hits, ap_at = 0.0, 0, []                                 # running average precision
    for i, r in enumerate(rel):
        if r:
            hits += 1
            prec_sum += hits / (i + 1)
        ap_at.append(prec_sum)
    cum = [0]
    for r in rel:
        cum.append(cum[-1] + r)

    def rel_in(k):
        return cum[min(k, len(rel))]

    def ndcg(k):
        idcg = _dcg(ideal, k)
        return _dcg(gains, k) / idcg if idcg > 0 else 0.0

    out = {}
    for k in ks:
        out[f"hit@{k}"] = 1.0 if first is not None and first < k else 0.0
    for k in ks:
        out[f"mrr@{k}"] = 1.0 / (first + 1) if first is not None and first < k else 0.0
    for k in ks:
        out[f"ndcg@{k}"] = ndcg(k)
    for k in ks:
        out[f"recall@{k}"] = rel_in(k) / num_rel if num_rel else 0.0
    for k in ks:
        out[f"P@{k}"] = rel_in(k) / k
    for k in ks:
        out[f"map@{k}"] = (ap_at[min(k, len(ap_at)) - 1] if ap_at else 0.0) / num_rel if num_rel else 0.0
    out["ndcg"] = ndcg(None)
    out["map"] = prec_sum / num_rel if num_rel else 0.0
    out["recip_rank"] = 1.0 / (first + 1) if first is not None else 0.0
    return out


def counted_queries(run: Run, qrels: Qrels, conv: Conventions) -> list[str]:
    """The query ids a figure averages over, in qrels order (see ``Conventions.queries``)."""
    return [q for q in qrels if conv.queries == "judged" or q in run]


def ranked_list(run: Run, qid: str, conv: Conventions) -> list[str]:
    ranked = rank(run.get(qid, {}), conv.ties)
    if conv.ignore_identical_ids:
        ranked = [d for d in ranked if d != qid]
    return ranked


def evaluate(run: Run, qrels: Qrels, ks: Sequence[int] = DEFAULT_KS,
             conv: Conventions = Conventions()) -> dict[str, dict[str, float]]:
    """Per-query measures over the counted queries."""
    return {q: query_measures(ranked_list(run, q, conv), qrels[q], ks, conv) for q in counted_queries(run, qrels, conv)}


def mean(per_query: Mapping[str, Mapping[str, float]], name: str) -> float:
    vals = [m[name] for m in per_query.values()]
    return sum(vals) / len(vals) if vals else float("nan")
