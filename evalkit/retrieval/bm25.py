"""BM25 through ``bm25s`` (sparse-matrix BM25, Lucene's variant by default: idf ln(1 + (N - df + .5) /
(df + .5)), no constant (k1 + 1) factor; k1=1.5, b=0.75),
English stop words, no stemmer (an installed ``PyStemmer`` is not required)."""
from __future__ import annotations

from typing import Optional, Sequence


def bm25_run(doc_ids: Sequence[str], doc_texts: Sequence[str], query_ids: Sequence[str],
             query_texts: Sequence[str], depth: int, k1: float = 1.5, b: float = 0.75,
             method: str = "lucene", timings: Optional[dict] = None) -> dict[str, dict[str, float]]:
    """{query: {doc: BM25 score}} for the top ``depth`` docs of each query (docs scoring 0 left out);
    ``timings`` (a dict) receives index_s and search_s."""
    import time
    try:
        import bm25s
    except ImportError:
        from evalkit.util.extras import install_hint
        raise ValueError(f"the bm25 retriever needs the retrieval extra: {install_hint('retrieval')} (bm25s)") from None
    if not doc_ids:
        raise ValueError("bm25: empty corpus")
    t0 = time.time()
    retriever = bm25s.BM25(k1=k1, b=b, method=method)
    retriever.index(bm25s.tokenize(list(doc_texts), stopwords="en", show_progress=False), show_progress=False)
    depth = min(depth, len(doc_ids))
    t1 = time.time()
    # query terms as strings: bm25s maps them through the corpus vocabulary (ids from a separate
    # tokenize call would index another vocabulary)
    qtok = bm25s.tokenize(list(query_texts), stopwords="en", show_progress=False, return_ids=False)
    idx, scores = retriever.retrieve(qtok, k=depth, show_progress=False, n_threads=1)
    if timings is not None:
        timings.update(index_s=round(t1 - t0, 3), search_s=round(time.time() - t1, 3))
    run = {}
    for qi, q in enumerate(query_ids):
        run[q] = {doc_ids[int(j)]: float(s) for j, s in zip(idx[qi], scores[qi]) if s > 0}
    return run


def bm25_params(k1: float = 1.5, b: float = 0.75, method: str = "lucene") -> dict:
    return {"library": "bm25s", "k1": k1, "b": b, "method": method, "stopwords": "en", "stemmer": None}
