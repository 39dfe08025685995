"""evalkit's retrieval measures against trec_eval (pytrec-eval-terrier) and ranx, on many random runs
with ties, graded qrels, queries missing from the run, run queries missing from the qrels and
unjudged documents: equal to 1e-9 under each matching convention."""
import random

import pytest

from evalkit.retrieval.conventions import Conventions, parse_ks
from evalkit.retrieval.measures import evaluate, query_measures, rank

pytrec_eval = pytest.importorskip("pytrec_eval")

KS = (1, 3, 5, 10, 20)
TREC_NAMES = {"hit": "success", "ndcg": "ndcg_cut", "recall": "recall", "P": "P", "map": "map_cut"}


def random_case(seed, ties=True, grades=(0, 1, 2, 3)):
    rng = random.Random(seed)
    pool = [f"d{rng.randint(0, 400)}" for _ in range(120)] + [f"x{i}" for i in range(10)]  # ids of unequal length
    qrels, run = {}, {}
    for q in range(rng.randint(3, 25)):
        qid = f"q{q}"
        judged = rng.sample(pool, rng.randint(1, 15))
        qrels[qid] = {d: rng.choice(grades) for d in judged}
        if rng.random() < 0.15:
            continue  # judged query absent from the run
        cands = set(rng.sample(pool, rng.randint(0, 40))) | set(rng.sample(judged, rng.randint(0, len(judged))))
        if rng.random() < 0.2:
            cands.add(qid)  # a doc whose id is the query's
        if ties:
            run[qid] = {d: float(rng.randint(0, 6)) / 2 for d in cands}
        else:
            run[qid] = {d: rng.random() for d in cands}
    for q in range(rng.randint(0, 3)):  # run queries the qrels lack
        run[f"extra{q}"] = {d: rng.random() for d in rng.sample(pool, 5)}
    for qid in list(qrels):  # ids equal to a query id can be judged too
        if rng.random() < 0.1:
            qrels[qid][qid] = rng.choice(grades)
    return run, qrels


def trec_measures(ks):
    c = ",".join(map(str, ks))
    return {f"success.{c}", f"ndcg_cut.{c}", f"recall.{c}", f"P.{c}", f"map_cut.{c}", "ndcg", "map", "recip_rank"}


def ours_to_trec(name):
    if "@" not in name:
        return name
    fam, k = name.split("@")
    return f"{TREC_NAMES[fam]}_{k}" if fam in TREC_NAMES else None


@pytest.mark.parametrize("threshold", [1, 2])
def test_equals_trec_eval_on_random_runs_with_ties(threshold):
    checked = 0
    for seed in range(150):
        run, qrels = random_case(seed)
        ev = pytrec_eval.RelevanceEvaluator(qrels, trec_measures(KS), relevance_level=threshold)
        ref = ev.evaluate(run)
        ours = evaluate(run, qrels, KS, Conventions(rel_threshold=threshold, queries="run"))
        assert set(ours) == set(ref), seed  # trec_eval: queries in both the run and the qrels
        for qid, ms in ours.items():
            for name, v in ms.items():
                t = ours_to_trec(name)
                if t is None:
                    continue
                assert v == pytest.approx(ref[qid][t], abs=1e-9), (seed, qid, name)
                checked += 1
        # judged-queries convention = trec_eval -c: every qrels query, a missing one scoring 0
        judged = evaluate(run, qrels, KS, Conventions(rel_threshold=threshold))
        assert list(judged) == list(qrels)
        for qid in qrels:
            if qid not in run:
                assert all(v == 0.0 for v in judged[qid].values())
    assert checked > 20000


def test_mrr_at_k_is_recip_rank_truncated_against_trec_eval():
    for seed in range(50):
        run, qrels = random_case(seed)
        ref = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)
        ours = evaluate(run, qrels, KS, Conventions(queries="run"))
        for qid, ms in ours.items():
            rr = ref[qid]["recip_rank"]
            for k in KS:
                expect = rr if rr and 1 / rr <= k + 1e-9 else 0.0
                assert ms[f"mrr@{k}"] == pytest.approx(expect, abs=1e-9)


def test_ignore_identical_ids_equals_trec_eval_on_the_filtered_run():
    for seed in range(60):
        run, qrels = random_case(seed)
        filtered = {q: {d: s for d, s in docs.items() if d != q} for q, docs in run.items()}
        ref = pytrec_eval.RelevanceEvaluator(qrels, trec_measures(KS)).evaluate(filtered)
        ours = evaluate(run, qrels, KS, Conventions(queries="run", ignore_identical_ids=True))
        for qid, ms in ours.items():
            for name, v in ms.items():
                t = ours_to_trec(name)
                if t:
                    assert v == pytest.approx(ref[qid][t], abs=1e-9), (seed, qid, name)


def test_trec_tie_policy_is_docid_descending_and_input_policy_is_stable():
    scores = {"b": 1.0, "a": 1.0, "c": 1.0, "aa": 2.0}
    assert rank(scores, "trec") == ["aa", "c", "b", "a"]
    assert rank(scores, "input") == ["aa", "b", "a", "c"]
    # the tie policy changes the figure: only "a" is relevant
    assert query_measures(rank(scores, "trec"), {"a": 1}, (1, 2))["mrr@2"] == 0.0
    assert query_measures(rank(scores, "input"), {"a": 1}, (1, 3))["mrr@3"] == pytest.approx(1 / 3)


ranx = pytest.importorskip("ranx")
RANX = {"hit": "hit_rate", "mrr": "mrr", "recall": "recall", "P": "precision", "map": "map"}


def ranx_per_query(run, qrels, metrics):
    q, r = ranx.Qrels.from_dict(qrels), ranx.Run.from_dict(run)
    ranx.evaluate(q, r, metrics, make_comparable=True)
    return {m: dict(r.scores[m]) for m in metrics}


@pytest.mark.parametrize("gain", ["linear", "exponential"])
def test_equals_ranx_without_ties(gain):
    """ranx breaks ties by argsort, not doc id, so we compare on tie-free runs; its make_comparable
    fills queries missing from the run with nothing: our default ``judged`` convention."""
    checked = 0
    for seed in range(40):
        run, qrels = random_case(seed, ties=False, grades=(1, 2, 3))
        run = {q: d for q, d in run.items() if q in qrels}
        ours = evaluate(run, qrels, KS, Conventions(gain=gain))
        names = {}
        for k in (1, 5, 10):
            names.update({f"{fam}@{k}": f"{rx}@{k}" for fam, rx in RANX.items()})
            names[f"ndcg@{k}"] = f"{'ndcg' if gain == 'linear' else 'ndcg_burges'}@{k}"
        ref = ranx_per_query(run, qrels, list(names.values()))
        for ours_name, rx in names.items():
            for qid in qrels:
                assert ours[qid][ours_name] == pytest.approx(ref[rx].get(qid, 0.0), abs=1e-9), (seed, qid, rx)
                checked += 1
    assert checked > 5000


def test_exponential_gain_by_hand():
    ms = query_measures(["a", "b"], {"a": 1, "b": 3}, (2,), Conventions(gain="exponential"))
    dcg = 1 + 7 / __import__("math").log2(3)
    idcg = 7 + 1 / __import__("math").log2(3)
    assert ms["ndcg@2"] == pytest.approx(dcg / idcg, abs=1e-12)


def test_conventions_reject_bad_values():
    with pytest.raises(ValueError, match="gain"):
        Conventions(gain="log")
    with pytest.raises(ValueError, match="rel_threshold"):
        Conventions(rel_threshold=0)
    assert parse_ks("10+1+5") == (1, 5, 10)
    with pytest.raises(ValueError, match="cutoffs"):
        parse_ks("a")
