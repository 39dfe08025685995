"""Retrieval throughput at ~100k chunks: BM25 indexing and search (bm25s), dense embedding
(all-MiniLM-L6-v2, transformers mean pooling) and exact inner-product search, and evalkit's
trec_eval-exact measures against pytrec_eval on the same run.

Corpus: XSum articles and WikiText-2 test cut into overlapping word windows (words:16:10, about
110k chunks); queries: XSum summaries. Embedding all 100k chunks on a shared CPU would take an hour,
so embedding throughput is measured on a sample of real chunks and the dense index at full size is
built from random unit vectors (exact search costs the same whatever the vectors hold).

Dense search at full size: exact numpy vs faiss ``IndexFlatIP`` (same ids), and with ``--approx
ivf|hnsw`` an approximate faiss index with its recall@depth against exact (random vectors have no
cluster structure: the hardest case for an approximate index). BLAS and faiss both get ``--threads``.

    python bench/bench_retrieval.py [--queries 1000] [--embed-sample 256] [--threads 1] [--approx ivf]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def corpus_and_queries(n_queries: int):
    from evalkit.retrieval.chunking import ChunkSpec, chunk_corpus
    rows = [json.loads(line) for line in open(DATA / "xsum" / "test.jsonl", encoding="utf-8")]
    docs = {str(r["id"]): r["document"] for r in rows}
    wiki = (DATA / "wikitext" / "wikitext-2-raw" / "wiki.test.raw").read_text(encoding="utf-8")
    docs.update({f"wiki{i}": para for i, para in enumerate(p for p in wiki.split("\n \n") if p.strip())})
    chunks, owner = chunk_corpus(docs, ChunkSpec(16, 10))
    queries = {f"s{r['id']}": r["summary"] for r in rows[:n_queries]}
    qrels = {f"s{r['id']}": {str(r["id"]): 1} for r in rows[:n_queries]}
    return chunks, owner, queries, qrels


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--embed-sample", type=int, default=256, help="real chunks embedded to measure chunks/s")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--approx", choices=("none", "ivf", "hnsw"), default="none",
                    help="also time an approximate faiss index (default: none)")
    args = ap.parse_args()
    from evalkit.retrieval.bm25 import bm25_run
    from evalkit.retrieval.chunking import docs_from_chunks
    from evalkit.retrieval.conventions import Conventions
    from evalkit.retrieval.dense import HFEmbedder
    from evalkit.retrieval.embed_models import resolve_embedder
    from evalkit.retrieval.measures import evaluate

    chunks, owner, queries, qrels = corpus_and_queries(args.queries)
    ids, texts = list(chunks), list(chunks.values())
    print(f"corpus: {len(ids):,} chunks (words:16:10) from {len(set(owner.values())):,} documents; "
          f"{len(queries)} queries (XSum summaries)")

    tm: dict = {}
    run = bm25_run(ids, texts, list(queries), list(queries.values()), args.depth, timings=tm)
    doc_run = docs_from_chunks(run, owner, args.depth)
    print(f"BM25 (bm25s): index {len(ids):,} chunks in {tm['index_s']:.1f}s ({len(ids) / tm['index_s']:,.0f} chunks/s); "
          f"search {len(queries) / tm['search_s']:,.0f} queries/s (tokenising included)")

    emb = HFEmbedder(resolve_embedder("all-minilm-l6-v2"), threads=args.threads)
    sample = texts[:: max(1, len(texts) // args.embed_sample)][:args.embed_sample]
    t0 = time.time()
    for i in range(0, len(sample), 32):
        emb(sample[i:i + 32])
    t_chunks = time.time() - t0
    qtexts = list(queries.values())[:args.embed_sample]
    t0 = time.time()
    qv = np.concatenate([emb(qtexts[i:i + 32]) for i in range(0, len(qtexts), 32)])
    t_q = time.time() - t0
    rate = len(sample) / t_chunks
    print(f"dense embedding (transformers, {args.threads} thread): {rate:,.1f} chunks/s, "
          f"{len(qtexts) / t_q:,.1f} queries/s; the {len(ids):,} chunks would take {len(ids) / rate / 60:,.0f} min")

    rng = np.random.default_rng(0)
    index = rng.standard_normal((len(ids), qv.shape[1])).astype(np.float32)
    index /= np.linalg.norm(index, axis=1, keepdims=True)
    from threadpoolctl import threadpool_limits
    from evalkit.retrieval.vector_index import IndexSpec, topk
    with threadpool_limits(args.threads):
        t0 = time.time()
        _, exact_idx, _ = topk(qv, index, args.depth, IndexSpec("numpy"))
        t_s = time.time() - t0
    print(f"exact search (numpy, {len(ids):,} x {qv.shape[1]}, {args.threads} thread): {len(qv) / t_s:,.0f} queries/s")
    try:
        import faiss
    except ImportError:
        faiss = None
        print("faiss: not installed (pip install faiss-cpu)")
    if faiss is not None:
        specs = [("flat", IndexSpec("flat", threads=args.threads))]
        if args.approx != "none":
            specs.append((args.approx, IndexSpec(args.approx, threads=args.threads)))
        for name, spec in specs:
            t0 = time.time()
            _, idx, info = topk(qv, index, args.depth, spec)
            t_f = time.time() - t0
            same = float(np.mean([len(set(a) & set(b)) / args.depth for a, b in zip(idx.tolist(), exact_idx.tolist())]))
            params = {k: v for k, v in info.items() if k in ("m", "ef_construction", "ef_search", "nlist", "nprobe")}
            print(f"faiss {name} {params or ''}(build + search, {args.threads} thread): {len(qv) / t_f:,.0f} queries/s, "
                  f"{t_s / t_f:.2f}x numpy; recall@{args.depth} vs exact {same:.4f}")

    import pytrec_eval
    t0 = time.time()
    ours = evaluate(doc_run, qrels, (1, 10, 100), Conventions(queries="run"))
    t_ours = time.time() - t0
    t0 = time.time()
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.1,10,100", "success.1,10,100", "recall.1,10,100",
                                                 "P.1,10,100", "map_cut.1,10,100", "ndcg", "map", "recip_rank"}).evaluate(doc_run)
    t_ref = time.time() - t0
    worst = max(abs(ours[q]["ndcg@10"] - ref[q]["ndcg_cut_10"]) for q in ref)
    print(f"measures on the BM25 run ({len(ours)} queries x {args.depth} docs): evalkit {t_ours:.3f}s, "
          f"pytrec_eval {t_ref:.3f}s, ratio {t_ours / t_ref:.1f}x; max |ndcg@10 diff| {worst:.1e}")
    hit = sum(m["hit@10"] for m in ours.values()) / len(ours)
    print(f"BM25 document hit@10 through 16-word chunks: {hit:.3f}")
    return 0


if __name__ == "__main__":
    from results_md import record_run
    sys.exit(record_run("retrieval", main))
