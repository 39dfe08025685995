"""The retrievers evalkit runs: BM25 against the Lucene formula by hand, RRF and weighted fusion by
hand, the dense bi-encoder on the real all-MiniLM-L6-v2 (cache: a rerun embeds nothing), vLLM
``LLM.embed`` equal to transformers mean pooling to 1e-5, and ``evalkit retrieve`` on an XSum
subset writing BM25, dense and hybrid records that ``evalkit compare`` pairs."""
import json
import math

import numpy as np
import pytest

from conftest import shared, evalkit_cli
from evalkit.retrieval import fusion
from evalkit.records import load_run

XSUM = "xsum/test.jsonl"


def test_rrf_and_weighted_fusion_by_hand():
    a = {"q": {"x": 3.0, "y": 2.0, "z": 1.0}}
    b = {"q": {"z": 0.9, "x": 0.5}}
    f = fusion.rrf([a, b], k=60)["q"]
    assert f["x"] == pytest.approx(1 / 61 + 1 / 62) and f["y"] == pytest.approx(1 / 62)
    assert f["z"] == pytest.approx(1 / 63 + 1 / 61)
    w = fusion.weighted([a, b], [0.25, 0.75])["q"]
    assert w["x"] == pytest.approx(0.25 * 1 + 0.75 * 0) and w["z"] == pytest.approx(0.25 * 0 + 0.75 * 1)
    assert w["y"] == pytest.approx(0.25 * 0.5)


def test_bm25_equals_the_lucene_formula():
    """bm25s's default method is Lucene's BM25."""
    pytest.importorskip("bm25s")
    from evalkit.retrieval.bm25 import bm25_run
    docs = {"d1": "apple banana apple", "d2": "banana cherry", "d3": "cherry cherry cherry durian", "d4": "eggplant"}
    run = bm25_run(list(docs), list(docs.values()), ["q"], ["apple cherry"], depth=10)["q"]
    toks = {d: t.split() for d, t in docs.items()}
    avgdl = sum(len(t) for t in toks.values()) / len(toks)
    k1, b, n = 1.5, 0.75, len(docs)

    def score(d):
        s = 0.0
        for term in ("apple", "cherry"):
            df = sum(term in t for t in toks.values())
            tf = toks[d].count(term)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            # Lucene (>= 8) drops BM25's constant (k1 + 1) factor: same ranking, smaller scores
            s += idf * tf / (tf + k1 * (1 - b + b * len(toks[d]) / avgdl)) if tf else 0.0
        return s
    expect = {d: score(d) for d in docs if score(d) > 0}
    assert set(run) == set(expect)
    for d, s in expect.items():
        assert run[d] == pytest.approx(s, rel=1e-5)


def xsum_texts(n):
    rows = [json.loads(line) for line in open(shared(XSUM), encoding="utf-8")][:n]
    return [r["document"] for r in rows], [r["summary"] for r in rows]


def test_dense_known_item_on_real_minilm_embeddings_as_engine_requests(minilm, tmp_path):
    """Embeddings are ``embed`` requests: deduped, cached by embedder identity, served on a rerun."""
    from evalkit.backends.embedding import EmbeddingBackend
    from evalkit.run.cache import ResponseCache
    from evalkit.retrieval.dense import HFEmbedder, search
    from evalkit.retrieval.pipeline import embed_texts
    arts, sums = xsum_texts(24)
    emb = HFEmbedder(minilm, threads=1)
    backend = EmbeddingBackend(emb, chunk_size=8)
    cache = ResponseCache(tmp_path / "responses.sqlite")
    stats = {}
    dv = embed_texts(backend, cache, arts + arts[:3], stats)  # duplicates embed once
    assert stats["computed"] == 24 and stats["unique"] == 24 and dv.shape == (27, 384)
    assert np.allclose(np.linalg.norm(dv, axis=1), 1, atol=1e-5)
    assert np.array_equal(dv[:24], emb(arts))  # float32 survives the cache's JSON exactly
    cache.close()
    backend.embed = lambda reqs: pytest.fail("re-embedded a cached text")
    again, stats2 = ResponseCache(tmp_path / "responses.sqlite"), {}
    dv2 = embed_texts(backend, again, arts, stats2)
    assert np.array_equal(dv[:24], dv2) and stats2["cached"] == 24 and stats2["computed"] == 0
    qv = emb(sums)
    ids = [f"a{i}" for i in range(24)]
    run = search(qv, dv2, ids, [f"s{i}" for i in range(24)], depth=5)
    top1 = sum(max(run[f"s{i}"], key=run[f"s{i}"].get) == f"a{i}" for i in range(24))
    assert top1 >= 18  # summaries find their own article (measured 0.80 hit@1 over all 1,000)


@pytest.mark.vllm
@pytest.mark.slow
def test_vllm_embed_equals_transformers_mean_pooling(minilm):
    pytest.importorskip("vllm")
    from evalkit.retrieval.dense import HFEmbedder, VLLMEmbedder
    arts, sums = xsum_texts(6)
    texts = arts + sums + ["a", "hello world"]  # long articles are truncated at 256 tokens by both
    ref = HFEmbedder(minilm, threads=1)(texts)
    emb = VLLMEmbedder(minilm)
    try:
        ours = emb(texts)
    finally:
        emb.close()
    assert ours.shape == ref.shape == (14, 384)
    assert float(np.abs(ours - ref).max()) < 1e-5


evalkit = evalkit_cli


def test_retrieve_cli_xsum_bm25_dense_hybrid_records_and_compare(minilm, tmp_path):
    data = shared(XSUM)
    r = evalkit("retrieve", "--task", "xsum_retrieval", "--data", str(data), "--task-args", "limit_corpus=40,k=1+10",
                "--retriever", "bm25,dense,hybrid", "--limit", "30", "--threads", "1",
                "--embedding-cache", str(tmp_path / "emb.sqlite"), "--save-run", "runs", "--output", "res",
                cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    paths = [line.split("run record: ")[1] for line in r.stdout.splitlines() if line.startswith("run record: ")]
    recs = {load_run(tmp_path / p).run.model.name: load_run(tmp_path / p) for p in paths}
    assert set(recs) == {"bm25", "dense", "hybrid"}
    for name, rec in recs.items():
        m = rec.tasks["xsum_retrieval"]["metrics"]
        assert m["hit@10"]["n"] == 30 and m["hit@10"]["ci_low"] <= m["hit@10"]["value"] <= m["hit@10"]["ci_high"]
        assert m["mrr@10"]["value"] > 0.5, (name, m["mrr@10"])
        assert rec.tasks["xsum_retrieval"]["extra"]["corpus_size"] == 40
    assert recs["hybrid"].tasks["xsum_retrieval"]["extra"]["retriever"]["fusion"] == "rrf"
    # the saved TREC run scores to the same figures through `evalkit score`
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"s{json.loads(line)['id']} 0 {json.loads(line)['id']} 1\n"
                             for line in open(data, encoding="utf-8").readlines()[:30]))
    r2 = evalkit("score", "--task", "retrieval", "--run", "runs/xsum_retrieval.dense.trec", "--qrels", str(qrels),
                 "--task-args", "k=1+10", "--no-output", cwd=tmp_path)
    assert r2.returncode == 0, r2.stderr
    line = next(x for x in r2.stdout.splitlines() if " mrr@10 " in x)
    assert float(line.split()[2]) == pytest.approx(recs["dense"].tasks["xsum_retrieval"]["metrics"]["mrr@10"]["value"],
                                                   abs=1e-4)
    r3 = evalkit("compare", str(recs["bm25"].path), str(recs["hybrid"].path), cwd=tmp_path)
    assert r3.returncode in (0, 1), r3.stderr
    assert "mrr@10" in r3.stdout
    # a second call finds every embedding in the cache
    r4 = evalkit("retrieve", "--task", "xsum_retrieval", "--data", str(data), "--task-args", "limit_corpus=40",
                 "--retriever", "dense", "--limit", "30", "--embedding-cache", str(tmp_path / "emb.sqlite"),
                 "--output", "res", cwd=tmp_path)
    assert r4.returncode == 0, r4.stderr[-1000:]
    path = next(line.split("run record: ")[1] for line in r4.stdout.splitlines() if line.startswith("run record: "))
    stats = load_run(tmp_path / path).tasks["xsum_retrieval"]["extra"]["embeddings"]
    assert stats["computed"] == 0 and stats["cached"] == 70 and stats["cache"].endswith("emb.sqlite")


def test_retrieve_cli_bad_input(tmp_path):
    (tmp_path / "empty").mkdir()
    r = evalkit("retrieve", "--task", "retrieval", "--data", str(tmp_path / "empty"), cwd=tmp_path)
    assert r.returncode == 2 and "not a BEIR folder" in r.stderr and "Traceback" not in r.stderr
    (tmp_path / "x.jsonl").write_text("")
    r = evalkit("retrieve", "--task", "xsum_retrieval", "--data", str(tmp_path / "x.jsonl"), cwd=tmp_path)
    assert r.returncode == 2 and "empty corpus" in r.stderr
    r = evalkit("retrieve", "--task", "xsum_retrieval", "--data", "x.jsonl", "--retriever", "splade", cwd=tmp_path)
    assert r.returncode == 2 and "splade" in r.stderr


def test_chunking_windows_and_doc_level_scores(tmp_path):
    from evalkit.retrieval.chunking import ChunkSpec, chunk_corpus, chunk_text, docs_from_chunks
    spec = ChunkSpec.parse("words:4:1")
    assert chunk_text("a b c d e f g h i j", spec) == ["a b c d", "d e f g", "g h i j"]
    assert chunk_text("a b", spec) == ["a b"]
    chunks, owner = chunk_corpus({"x": "a b c d e", "y": "q"}, spec)
    assert chunks == {"x#0": "a b c d", "x#1": "d e", "y#0": "q"} and owner["x#1"] == "x"
    assert docs_from_chunks({"q": {"x#0": 0.2, "x#1": 0.9, "y#0": 0.5}}, owner, 5) == {"q": {"x": 0.9, "y": 0.5}}
    with pytest.raises(ValueError, match="words:SIZE"):
        ChunkSpec.parse("lines:4")
    with pytest.raises(ValueError, match="overlap"):
        ChunkSpec.parse("words:4:4")
    r = evalkit("retrieve", "--task", "xsum_retrieval", "--data", str(shared(XSUM)), "--task-args", "limit_corpus=50",
                "--retriever", "bm25", "--chunk", "words:64:16", "--output", "res", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-1000:]
    path = next(line.split("run record: ")[1] for line in r.stdout.splitlines() if line.startswith("run record: "))
    entry = load_run(tmp_path / path).tasks["xsum_retrieval"]
    assert entry["extra"]["retriever"]["chunking"]["size"] == 64 and entry["extra"]["retriever"]["chunking"]["chunks"] > 50
    assert entry["metrics"]["hit@10"]["value"] > 0.8  # document-level hits through chunks


def test_embed_requests_key_check_and_round_trip():
    from evalkit.run import response_checks
    from evalkit.taskapi.requests import EmbedRequest, response_from_json, response_to_json
    a, b = EmbedRequest("hello"), EmbedRequest("hello")
    assert a.key() == b.key() != EmbedRequest("hello ").key()
    vec = [float(np.float32(x)) for x in (0.1, -0.2, 0.3)]
    assert response_from_json("embed", json.loads(json.dumps(response_to_json("embed", vec)))) == vec
    assert response_checks.problem("embed", a, vec) is None
    for bad in ([], [float("nan")], "x", [[1.0]]):
        assert response_checks.problem("embed", a, bad), bad  # never cached
