"""Top-k inner-product search over L2-normalised vectors (cosine): exact numpy search for small
corpora, a faiss index for large ones.

Index kinds (``--index``):
- ``auto`` (default): numpy below ``threshold`` vectors (1,000,000), faiss ``IndexFlatIP`` (exact) from
  there, where numpy's 256-query score blocks would pass 1 GB (at 100k vectors numpy was the
  faster, bench/RESULTS.md); numpy again when faiss is not installed (recorded).
- ``numpy``: exact, in blocks of 256 queries.
- ``flat``: faiss ``IndexFlatIP``, exact.
- ``hnsw``: faiss ``IndexHNSWFlat`` (inner product), approximate: ``m`` (32), ``ef_construction``
  (200), ``ef_search`` (128). Built on one thread: faiss's parallel inserts make the graph depend on
  the thread schedule; searches stay parallel (each query alone is deterministic).
- ``ivf``: faiss ``IndexIVFFlat`` (inner product), approximate: ``nlist`` (default 4·sqrt(n)),
  ``nprobe`` (16), k-means ``seed`` (default: derived from the run seed, recorded).

``threads`` sets faiss's OpenMP threads for the call only (the previous count is restored after).
``split_info`` parts the search info into what changes results (index kind, exact, the approximate
index's parameters: the retriever's identity) and the rest (threshold, library, recall: stats).

Ties: where tied scores straddle the depth cut, the lowest corpus positions are kept. faiss's heap
keeps other ones (measured: the higher positions of duplicated vectors), so faiss is asked for
``TIE_MARGIN`` (32) more and its results cut the same way; every row is ordered by score descending,
ties by position ascending, so numpy and flat return the same ids in the same order (verified in
tests/retrieval/test_retrieval_faiss.py; a tie group of more than 32 at the cut, or two scores the libraries
round apart by ~1e-7, may still differ). The measures then rank by score, ties by doc id, as trec_eval.
An approximate index records its recall@depth against exact search on up to 200 queries.
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from evalkit.scoring.stats import derive_seed

KINDS = ("auto", "numpy", "flat", "hnsw", "ivf")
PARAMS = {"hnsw": {"m": 32, "ef_construction": 200, "ef_search": 128},
          "ivf": {"nlist": 0, "nprobe": 16, "seed": None}}  # seed None: derived from the run seed
RECALL_SAMPLE = 200
TIE_MARGIN = 32


@dataclass(frozen=True)
class IndexSpec:
    kind: str = "auto"
    threshold: int = 1_000_000
    params: dict = field(default_factory=dict)
    threads: Optional[int] = None
    seed: int = 1234                       # the run seed (ivf's k-means seed derives from it)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"--index {self.kind!r}: expected one of {', '.join(KINDS)}")
        allowed = PARAMS.get(self.kind, {})
        bad = sorted(set(self.params) - set(allowed))
        if bad:
            raise ValueError(f"--index-args {', '.join(bad)}: index {self.kind} takes "
                             f"{', '.join(allowed) or 'no parameters'}")
        for k, v in self.params.items():
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ValueError(f"--index-args {k}={v!r}: expected a non-negative integer")

    def resolved(self, n: int) -> str:
        if self.kind != "auto":
            return self.kind
        if n < self.threshold:
            return "numpy"
        return "flat" if _faiss() is not None else "numpy"


def split_info(info: dict) -> tuple[dict, dict]:
    """(identity, stats) of ``topk``'s info: identity holds only what changes the results."""
    keep = {"index", "exact", *PARAMS.get(info["index"], {})}
    return ({k: v for k, v in info.items() if k in keep}, {k: v for k, v in info.items() if k not in keep})


@contextmanager
def _omp_threads(faiss, n: Optional[int]):
    """faiss's process-wide OpenMP thread count set to ``n`` (when given) inside, restored after."""
    if not n:
        yield
        return
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(n)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def _faiss():
    try:
        import faiss
    except ImportError:
        return None
    return faiss


def numpy_topk(query_vecs: np.ndarray, doc_vecs: np.ndarray, depth: int):
    """(scores, positions), each row sorted by score descending, ties by position ascending."""
    scores, idx = [], []
    n = doc_vecs.shape[0]
    for i in range(0, len(query_vecs), 256):
        sims = query_vecs[i:i + 256] @ doc_vecs.T
        if depth < n:
            part = np.argpartition(-sims, depth - 1, axis=1)[:, :depth]
            cut = np.take_along_axis(sims, part, axis=1).min(axis=1)
        for r, row in enumerate(sims):
            cand = np.flatnonzero(row >= cut[r]) if depth < n else np.arange(n)
            order = cand[np.lexsort((cand, -row[cand]))][:depth]
            idx.append(order)
            scores.append(row[order])
    return np.asarray(scores, dtype=np.float32).reshape(-1, depth), np.asarray(idx).reshape(-1, depth)


def faiss_index(kind: str, doc_vecs: np.ndarray, params: dict):
    faiss = _faiss()
    if faiss is None:
        raise ValueError(f"--index {kind} needs faiss: pip install faiss-cpu (the retrieval extra)")
    d = doc_vecs.shape[1]
    if kind == "flat":
        index = faiss.IndexFlatIP(d)
    elif kind == "hnsw":
        index = faiss.IndexHNSWFlat(d, params["m"], faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = params["ef_construction"]
        index.hnsw.efSearch = params["ef_search"]
    else:
        quantizer = faiss.IndexFlatIP(d)
        index = faiss.IndexIVFFlat(quantizer, d, params["nlist"], faiss.METRIC_INNER_PRODUCT)
        index.cp.seed = params["seed"]
        index.train(doc_vecs)
        index.nprobe = params["nprobe"]
    with _omp_threads(faiss, 1 if kind == "hnsw" else None):  # parallel HNSW inserts are schedule-dependent
        index.add(doc_vecs)
    return index


def topk(query_vecs: np.ndarray, doc_vecs: np.ndarray, depth: int, spec: Optional[IndexSpec] = None):
    """(scores, positions, info): the top ``depth`` corpus positions per query and what searched."""
    spec = spec or IndexSpec()
    n = doc_vecs.shape[0]
    depth = min(depth, n)
    kind = spec.resolved(n)
    info = {"index": kind, "exact": kind in ("numpy", "flat"), "threshold": spec.threshold}
    if spec.kind == "auto" and n >= spec.threshold and kind == "numpy":
        info["note"] = "faiss not installed: exact numpy search"
    q = np.ascontiguousarray(query_vecs, dtype=np.float32)
    if kind == "numpy":
        scores, idx = numpy_topk(q, doc_vecs, depth)
        return scores, idx, info
    params = {**PARAMS.get(kind, {}), **spec.params}
    if kind == "ivf":
        params["nlist"] = params["nlist"] or max(1, min(n, int(4 * math.sqrt(n))))
        if params["nlist"] > n:
            raise ValueError(f"--index-args nlist={params['nlist']}: more lists than the {n} vectors to cluster")
        if params["seed"] is None:
            params["seed"] = derive_seed(spec.seed, "ivf", "kmeans") % (2 ** 31)
    faiss = _faiss()
    with _omp_threads(faiss, spec.threads if faiss is not None else None):
        index = faiss_index(kind, np.ascontiguousarray(doc_vecs, dtype=np.float32), params)
        # faiss's heap settles ties at the cut its own way: fetch TIE_MARGIN more, then keep the canonical
        # top depth (score desc, position asc), as numpy does
        scores, idx = index.search(q, min(n, depth + TIE_MARGIN))
    order = np.lexsort((np.where(idx < 0, n, idx), -scores), axis=1)[:, :depth]
    scores, idx = np.take_along_axis(scores, order, axis=1), np.take_along_axis(idx, order, axis=1)
    info.update({"library": f"faiss {faiss.__version__}", **params})
    if kind == "hnsw":
        info["build_threads"] = 1
    if not info["exact"]:
        sample = min(len(q), RECALL_SAMPLE)
        _, exact = numpy_topk(q[:sample], doc_vecs, depth)
        hits = sum(len(set(a.tolist()) & set(b.tolist())) for a, b in zip(idx[:sample], exact))
        info[f"recall_vs_exact@{depth}"] = round(hits / (sample * depth), 6) if sample else None
        info["recall_queries"] = sample
    return scores, idx, info


def search_run(query_vecs, doc_vecs, doc_ids: Sequence[str], query_ids: Sequence[str], depth: int,
               spec: Optional[IndexSpec] = None):
    """({query: {doc: score}}, search info); positions faiss leaves empty (-1) are dropped."""
    scores, idx, info = topk(query_vecs, doc_vecs, depth, spec)
    run = {q: {doc_ids[j]: float(s) for j, s in zip(idx[r], scores[r]) if j >= 0}
           for r, q in enumerate(query_ids)}
    return run, info
