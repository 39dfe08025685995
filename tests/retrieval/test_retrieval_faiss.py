"""Dense search through faiss: the flat index's top-k equals exact numpy top-k (ids and scores to
1e-5) on real all-MiniLM-L6-v2 embeddings of MBPP, ties at the cut included (duplicated solutions:
both keep the lowest corpus positions); HNSW and IVF recall@k against exact search, measured and
recorded; the auto threshold; ``evalkit retrieve --index hnsw`` recording its parameters."""
import json

import numpy as np
import pytest

from conftest import shared

faiss = pytest.importorskip("faiss")


@pytest.fixture(scope="module")
def vectors():
    pytest.importorskip("transformers")
    from evalkit.retrieval.dense import HFEmbedder
    from evalkit.retrieval.embed_models import resolve_embedder
    try:
        emb = HFEmbedder(resolve_embedder("all-minilm-l6-v2"), threads=1)
    except ValueError as e:
        pytest.fail(f"all-MiniLM-L6-v2, which scripts/install.sh installs, is missing: {e}")
    rows = [json.loads(line) for line in open(shared("mbpp/mbpp.jsonl"), encoding="utf-8")][10:210]
    docs = np.concatenate([emb([r["code"] for r in rows[i:i + 50]]) for i in range(0, len(rows), 50)])
    docs = np.concatenate([docs, docs[:20]])  # 20 exact duplicates: tied scores
    queries = np.concatenate([emb([r["text"] for r in rows[i:i + 30]]) for i in range(0, 60, 30)])
    return np.ascontiguousarray(docs), np.ascontiguousarray(queries)


def test_faiss_flat_topk_equals_numpy_exact_topk(vectors):
    from evalkit.retrieval.vector_index import IndexSpec, numpy_topk, topk
    docs, queries = vectors
    for depth in (1, 10, 50):
        ns, ni = numpy_topk(queries, docs, depth)
        fs, fi, info = topk(queries, docs, depth, IndexSpec("flat"))
        assert info["index"] == "flat" and info["exact"]
        assert np.abs(ns - fs).max() < 1e-5
        full = queries @ docs.T  # the reference: a full sort by (score desc, position asc)
        # faiss's picks score as numpy's; which of two duplicated documents wins a tie can follow
        # the last bit of faiss's own BLAS, which moves with buffer alignment (the process allocator)
        assert np.abs(np.take_along_axis(full, fi, 1) - ns).max() < 1e-5, depth
        assert (ni == fi).mean() > 0.9, depth
        ref = np.array([np.lexsort((np.arange(len(row)), -row))[:depth] for row in full])
        assert np.array_equal(ni, ref)
    # a query equal to a duplicated document: its two copies tie, the lower position wins the cut
    q = docs[[5]]
    assert numpy_topk(q, docs, 1)[1].tolist() == [[5]] == topk(q, docs, 1, IndexSpec("flat"))[1].tolist()
    assert sorted(numpy_topk(q, docs, 2)[1][0].tolist()) == [5, 205]


def test_approximate_indexes_recall_against_exact(vectors, capsys):
    from evalkit.retrieval.vector_index import IndexSpec, numpy_topk, topk
    docs, queries = vectors
    _, exact = numpy_topk(queries, docs, 10)
    got = {}
    for spec in (IndexSpec("hnsw"), IndexSpec("hnsw", params={"m": 4, "ef_search": 10}),
                 IndexSpec("ivf", params={"nlist": 16, "nprobe": 2}), IndexSpec("ivf", params={"nlist": 16, "nprobe": 16})):
        _, idx, info = topk(queries, docs, 10, spec)
        recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(idx.tolist(), exact.tolist())])
        assert info["recall_vs_exact@10"] == pytest.approx(recall, abs=1e-6) and not info["exact"]
        got[f"{spec.kind} {spec.params}"] = recall
    with capsys.disabled():
        print("\nrecall@10 vs exact (220 MiniLM vectors, 60 queries):", {k: round(float(v), 3) for k, v in got.items()})
    assert got["hnsw {}"] >= 0.95
    assert got["ivf {'nlist': 16, 'nprobe': 16}"] == 1.0  # every list probed: exact
    assert got["ivf {'nlist': 16, 'nprobe': 2}"] < 1.0   # approximate for real


def test_auto_threshold_and_bad_index_args(vectors):
    from evalkit.retrieval.vector_index import IndexSpec, topk
    docs, queries = vectors
    assert topk(queries[:2], docs, 5, IndexSpec())[2]["index"] == "numpy"
    assert topk(queries[:2], docs, 5, IndexSpec(threshold=100))[2]["index"] == "flat"
    with pytest.raises(ValueError, match="index hnsw takes m, ef_construction, ef_search"):
        IndexSpec("hnsw", params={"nprobe": 4})
    with pytest.raises(ValueError, match="expected one of"):
        IndexSpec("annoy")
    with pytest.raises(ValueError, match="more lists than the 220 vectors"):
        topk(queries[:2], docs, 5, IndexSpec("ivf", params={"nlist": 1000}))


def test_threads_restored_hnsw_built_on_one_thread_ivf_seed_from_the_run_seed(vectors):
    from evalkit.retrieval.vector_index import IndexSpec, split_info, topk
    from evalkit.scoring.stats import derive_seed
    docs, queries = vectors
    before = faiss.omp_get_max_threads()
    try:
        faiss.omp_set_num_threads(3)
        runs = [topk(queries, docs, 10, IndexSpec("hnsw", params={"m": 8}, threads=t)) for t in (1, 2, 2)]
        assert faiss.omp_get_max_threads() == 3  # the caller's count, not the last spec's
    finally:
        faiss.omp_set_num_threads(before)
    assert all(np.array_equal(runs[0][1], r[1]) for r in runs[1:]) and runs[0][2]["build_threads"] == 1
    ivf = {"nlist": 16, "nprobe": 2}
    info = topk(queries, docs, 10, IndexSpec("ivf", params=ivf))[2]
    assert info["seed"] == derive_seed(1234, "ivf", "kmeans") % 2 ** 31
    assert topk(queries, docs, 10, IndexSpec("ivf", params=ivf, seed=7))[2]["seed"] == derive_seed(7, "ivf", "kmeans") % 2 ** 31
    assert topk(queries, docs, 10, IndexSpec("ivf", params={**ivf, "seed": 5}, seed=7))[2]["seed"] == 5
    identity, stats = split_info(info)
    assert identity == {"index": "ivf", "exact": False, "nlist": 16, "nprobe": 2, "seed": info["seed"]}
    assert {"threshold", "library", "recall_vs_exact@10"} <= set(stats)


def test_identity_hash_holds_what_changes_results_not_the_threshold(tmp_path):
    pytest.importorskip("transformers")
    from evalkit.records import load_run
    from evalkit.retrieval.pipeline import RetrieveConfig, retrieve

    def run(**kw):  # 60-doc corpus, embeddings cached after the first run
        cfg = RetrieveConfig(task="mbpp_retrieval", data_path=str(shared("mbpp/mbpp.jsonl")),
                             task_options={"limit_corpus": 60, "k": "1+10"}, retrievers=("dense",), limit=10,
                             threads=1, cache_path=str(tmp_path / "cache.sqlite"), **kw)
        rec = load_run(retrieve(cfg, str(tmp_path))[0]["run"]["path"])
        return rec.model["identity_hash"], rec.tasks["mbpp_retrieval"]["extra"]["embeddings"]

    (auto, emb), (auto_low, _), (numpy, _) = run(), run(index_threshold=1000), run(index="numpy")
    assert auto == auto_low == numpy and emb["search_threshold"] == 1_000_000
    (flat10, _), (flat20, _), (hnsw, _) = run(index_threshold=10), run(index_threshold=20), run(index="hnsw")
    assert flat10 == flat20 != auto  # both thresholds below the 60 docs: faiss flat
    assert hnsw not in (auto, flat10)


def test_retrieve_with_hnsw_records_its_parameters_and_recall(tmp_path):
    pytest.importorskip("transformers")
    from evalkit.records import load_run
    from evalkit.retrieval.pipeline import RetrieveConfig, retrieve
    cfg = RetrieveConfig(task="mbpp_retrieval", data_path=str(shared("mbpp/mbpp.jsonl")),
                         task_options={"limit_corpus": 60, "k": "1+10"}, retrievers=("dense",), limit=30,
                         threads=1, index="hnsw", index_args={"m": 16, "ef_search": 32})
    out = retrieve(cfg, str(tmp_path))
    entry = load_run(out[0]["run"]["path"]).tasks["mbpp_retrieval"]
    search = entry["extra"]["retriever"]["search"]
    assert search["index"] == "hnsw" and search["m"] == 16 and search["ef_search"] == 32 and not search["exact"]
    emb = entry["extra"]["embeddings"]
    assert 0.9 <= emb["search_recall_vs_exact@60"] <= 1.0 and emb["search_recall_queries"] == 30  # depth: the 60 docs
    with pytest.raises(ValueError, match="index ivf takes"):
        RetrieveConfig(task="mbpp_retrieval", index="ivf", index_args={"m": 4})
