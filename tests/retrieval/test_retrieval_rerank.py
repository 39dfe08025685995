"""Reranking the top-K of a first-stage run through the reward request kind.

The reranker here is evalkit's reward fixture (SmolLM2-135M with a logit("yes") - logit("no") head)
under the Qwen3-Reranker template: a real LLM reranker of the bundled model, but a WEAK one. These
tests prove plumbing and numerics (transformers and vLLM agree, the order is the one asked for, a
rerun scores nothing), never reranking quality.
"""
import math
import random

import pytest

from conftest import shared, evalkit_cli
from evalkit.records import load_run

XSUM = "xsum/test.jsonl"
pytest.importorskip("bm25s")


def _xsum_task(limit_corpus=None):
    from evalkit.tasks.retrieval import XSumKnownItem
    opts = {"k": "1+3+10"} | ({"limit_corpus": limit_corpus} if limit_corpus else {})
    return XSumKnownItem(data_path=str(shared(XSUM)), **opts)


@pytest.fixture(scope="module")
def fixture_dir():
    pytest.importorskip("transformers")
    import _reward_session
    return _reward_session.fixture_dir()


@pytest.fixture(scope="module")
def hf_reranker(fixture_dir):
    from evalkit.backends.reward_hf import HFRewardBackend
    b = HFRewardBackend(fixture_dir, batch_size=4, threads=1)
    b.record_spec = f"hf:{fixture_dir}"
    return b


def test_reorder_puts_the_top_k_by_score_then_the_rest_in_first_stage_order():
    from evalkit.retrieval.rerank import reorder
    order = {"q": ["a", "b", "c", "d", "e"]}
    out = reorder(order, {"q": {"a": 0.1, "b": 2.0, "c": 0.1}}, top=3)["q"]
    assert sorted(out, key=lambda d: -out[d]) == ["b", "a", "c", "d", "e"]  # a, c tie: first-stage order


def test_bad_rerank_options_are_clear_errors():
    from evalkit.retrieval.pipeline import RetrieveConfig
    with pytest.raises(ValueError, match="hf:PATH or vllm:PATH"):
        RetrieveConfig(task="xsum_retrieval", rerank="cohere:x")
    with pytest.raises(ValueError, match="--rerank-top"):
        RetrieveConfig(task="xsum_retrieval", rerank="hf:/x", rerank_top=0)
    with pytest.raises(ValueError, match=r"\{query\} and \{document\}"):
        RetrieveConfig(task="xsum_retrieval", rerank="hf:/x", rerank_template="{query} only")


def test_reranked_metrics_equal_metrics_by_hand_and_a_rerun_scores_nothing(hf_reranker, tmp_path):
    from evalkit.retrieval.pipeline import RetrieveConfig, retrieve
    cache = str(tmp_path / "rr.sqlite")
    cfg = RetrieveConfig(task="xsum_retrieval", data_path=str(shared(XSUM)),
                         task_options={"k": "1+3+10", "limit_corpus": 30}, limit=8, rerank=f"hf:{hf_reranker.path}",
                         rerank_top=4, rerank_doc_chars=400, cache_path=cache)
    first, reranked = retrieve(cfg, None, reranker=hf_reranker)
    assert first["run"]["model"]["name"] == "bm25" and reranked["run"]["model"]["name"] == "bm25+rerank"
    info = reranked["run"]["tasks"]["xsum_retrieval"]["extra"]["rerank"]
    assert info["top"] == 4 and info["template"] == "qwen3" and info["pairs"]["computed"] == 32
    assert info["identity"]["api"].startswith("transformers") and info["identity"]["activation"] == "none"
    ident = reranked["run"]["model"]["identity"]["rerank"]  # the record's model: retriever + reranker
    assert ident["identity"]["files"] and ident["template_sha256"] and "pairs" not in ident
    # the reranked order by hand: the reranker's own scores of the first 4 first-stage documents
    task = _xsum_task(30)
    data = task.data()
    from evalkit.retrieval.bm25 import bm25_run
    from evalkit.taskapi.requests import RewardRequest
    from evalkit.retrieval.rerank import RerankSpec
    spec = RerankSpec(f"hf:{hf_reranker.path}", top=4, doc_chars=400)
    qids = list(data.qrels)[:8]
    stage1 = bm25_run(list(data.corpus), list(data.corpus.values()), qids, [data.queries[q] for q in qids], 100)
    rows = {r["doc_id"]: r for r in reranked["samples"]["xsum_retrieval"]}
    for q in qids:
        ranked1 = sorted(sorted(stage1[q], reverse=True), key=lambda d: -stage1[q][d])  # trec ties: id desc
        head = ranked1[:4]
        s = dict(zip(head, hf_reranker.reward([RewardRequest(text=spec.render(data.queries[q], data.corpus[d]))
                                               for d in head])))
        order = sorted(head, key=lambda d: -s[d]) + ranked1[4:]
        gold = next(iter(data.qrels[q]))
        rank = order.index(gold) + 1 if gold in order else None
        m = rows[q]["metrics"]
        assert m["hit@3"] == float(rank is not None and rank <= 3)
        assert m["mrr@10"] == pytest.approx(1 / rank if rank and rank <= 10 else 0.0, abs=1e-12)
        assert m["ndcg@10"] == pytest.approx(1 / math.log2(rank + 1) if rank and rank <= 10 else 0.0, abs=1e-12)
    # a second run scores nothing; neither does a smaller K or other cutoffs
    for top, ks in ((4, "1+3+10"), (2, "1+5")):
        cfg2 = RetrieveConfig(**{**cfg.__dict__, "rerank_top": top,
                                 "task_options": {"k": ks, "limit_corpus": 30}})
        again = retrieve(cfg2, None, reranker=hf_reranker)[1]
        pairs = again["run"]["tasks"]["xsum_retrieval"]["extra"]["rerank"]["pairs"]
        assert pairs["computed"] == 0 and pairs["cached"] == 8 * top, pairs
        if top == 4:  # the same reranked run: the same model identity (so records compare and group)
            assert again["run"]["model"]["identity_hash"] == reranked["run"]["model"]["identity_hash"]


@pytest.mark.vllm
def test_vllm_and_transformers_rerank_scores_agree(fixture_dir, hf_reranker, vllm_reward):
    from evalkit.taskapi.requests import RewardRequest
    from evalkit.retrieval.rerank import RerankSpec
    task = _xsum_task(12)
    data = task.data()
    spec = RerankSpec(f"vllm:{fixture_dir}", doc_chars=600)
    reqs = [RewardRequest(text=spec.render(data.queries[q], data.corpus[d]))
            for q in list(data.qrels)[:4] for d in list(data.corpus)[:6]]
    hf = hf_reranker.reward(reqs)
    shuffled = list(range(len(reqs)))
    random.Random(3).shuffle(shuffled)
    vv = vllm_reward.reward([reqs[i] for i in shuffled])
    got = {i: x for i, x in zip(shuffled, vv)}
    assert max(abs(hf[i] - got[i]) for i in range(len(reqs))) < 1e-4
    assert len({round(x, 3) for x in hf}) > 10  # real scores, not a constant


evalkit = evalkit_cli


def test_xsum_bm25_vs_bm25_rerank_figures_with_cis_and_compare(hf_reranker, tmp_path):
    """50 XSum summaries against all 1,000 articles: BM25, then its top 2 reranked by the fixture
    (transformers, the reference; documents cut at 400 characters to keep the test short; the
    README's figures are the same with top 3 and 600 characters), compared by `evalkit compare`."""
    from evalkit.retrieval.pipeline import RetrieveConfig, retrieve
    cfg = RetrieveConfig(task="xsum_retrieval", data_path=str(shared(XSUM)), task_options={"k": "1+3+10"},
                         limit=50, rerank=f"hf:{hf_reranker.path}", rerank_top=2, rerank_doc_chars=400,
                         cache_path=str(tmp_path / "rr.sqlite"))
    recs = retrieve(cfg, str(tmp_path / "res"), reranker=hf_reranker)
    for rec in recs:
        m = rec["run"]["tasks"]["xsum_retrieval"]["metrics"]
        print(f"\n{rec['run']['model']['name']:12s} " + "  ".join(
            f"{k} {m[k]['value']:.3f} [{m[k]['ci_low']:.3f}, {m[k]['ci_high']:.3f}]" for k in ("hit@1", "mrr@10", "ndcg@10")))
        assert m["hit@1"]["n"] == 50 and m["mrr@10"]["ci_low"] <= m["mrr@10"]["value"] <= m["mrr@10"]["ci_high"]
    base, rr = (r["run"]["tasks"]["xsum_retrieval"]["metrics"] for r in recs)
    assert base["hit@3"]["value"] == rr["hit@3"]["value"]  # reranking the top 2 never changes the top 3's set
    assert base["hit@10"]["value"] == rr["hit@10"]["value"]
    info = recs[1]["run"]["tasks"]["xsum_retrieval"]["extra"]["rerank"]
    assert info["identity"]["api"].startswith("transformers") and info["pairs"]["unique"] == 100
    r = evalkit("compare", recs[0]["run"]["path"], recs[1]["run"]["path"], cwd=tmp_path)
    assert r.returncode in (0, 1), r.stderr
    assert "mrr@10" in r.stdout
    print(r.stdout[-2500:])
