"""avg@K, pass@k, pass^k, maj@K and their intervals over problems, against hand computations."""
from __future__ import annotations

import math

import pytest

from evalkit.scoring import repeats as rp
from evalkit.scoring.passk import pass_at_k
from evalkit.taskapi.items import Doc, RunContext
from evalkit.taskapi.requests import Completion
from evalkit.taskapi.task import GenerationTask, Metric, Scored


def test_ks():
    assert rp.repeat_ks(16) == (1, 2, 4, 8, 16)
    assert rp.repeat_ks(6) == (1, 2, 4, 6)
    assert rp.repeat_ks(1) == (1,)
    with pytest.raises(ValueError, match="K must be >= 1"):
        rp.repeat_ks(0)


def test_pass_hat_k_and_pass_at_k_by_hand():
    # n=5 samples, c=3 right: pass^2 = C(3,2)/C(5,2) = 3/10; pass@2 = 1 - C(2,2)/C(5,2) = 9/10
    assert rp.pass_hat_k(5, 3, 2) == pytest.approx(0.3)
    assert pass_at_k(5, 3, 2) == pytest.approx(0.9)
    assert rp.pass_hat_k(5, 3, 4) == 0.0 and rp.pass_hat_k(5, 5, 5) == 1.0 and rp.pass_hat_k(5, 3, 1) == 0.6
    with pytest.raises(ValueError, match=r"pass\^6 needs 1 <= k <= n"):
        rp.pass_hat_k(5, 3, 6)


def test_majority_ties_and_abstentions():
    assert rp.majority([7, 5, 5, 7]) == 0, "a tie goes to the answer seen first"
    assert rp.majority([5, 7, 7, 5]) == 0
    assert rp.majority([3, 5, 5]) == 1
    assert rp.majority([None, "", " 3 ", "3"]) == 2, "no answer does not vote; answers compare stripped"
    assert rp.majority([None, None]) is None


def test_problem_metrics_by_hand():
    m = rp.problem_metrics([1, 0, 1, 1], answers=[3, 4, 3, 3])
    assert list(m) == ["avg@4", "pass@1", "pass@2", "pass@4", "pass^1", "pass^2", "pass^4", "maj@4"]
    assert m["avg@4"] == m["pass@1"] == m["pass^1"] == 0.75
    assert m["pass@2"] == 1.0 and m["pass@4"] == 1.0          # one wrong sample: any 2 contain a right one
    assert m["pass^2"] == pytest.approx(3 / 6) and m["pass^4"] == 0.0
    assert m["maj@4"] == 1.0
    assert rp.problem_metrics([0, 0, 1], answers=[9, 9, 4])["maj@3"] == 0.0
    assert rp.problem_metrics([0, 0], answers=[None, None])["maj@2"] == 0.0
    assert "maj@2" not in rp.problem_metrics([0, 1])


# five problems, K=4, c = 4, 0, 2, 3, 1: per-problem means 1, 0, .5, .75, .25
C = [4, 0, 2, 3, 1]
K = 4
CORRECT = [[1] * c + [0] * (K - c) for c in C]


def test_clustered_and_naive_standard_errors_by_hand():
    # clustered (Miller 2024 eq. 4): per-problem sums of deviations 4*(m_c - .5) = 2, -2, 0, 1, -1
    assert rp.clustered_se(CORRECT) == pytest.approx(math.sqrt(4 + 4 + 0 + 1 + 1) / 20)
    # naive: 20 samples, 10 right: sqrt(p(1-p) * 20/19 / 20)
    assert rp.naive_se(CORRECT) == pytest.approx(math.sqrt(0.25 * 20 / 19 / 20))
    s = rp.summary(CORRECT)
    assert s["k"] == 4 and s["problems"] == 5 and s["samples"] == 20 and s["n_correct"] == 10
    assert s["design_effect"] == pytest.approx((rp.clustered_se(CORRECT) / rp.naive_se(CORRECT)) ** 2)


class Echo(GenerationTask):
    """A completion is right when it says "yes"; its extracted answer is its text."""
    name = "echo_repeats_test"
    metrics = (Metric("exact_match"),)

    def score_text(self, doc, text):
        return Scored({"exact_match": float(text == "yes")}, extracted=text)


def test_task_rows_and_intervals_over_problems_by_hand():
    t = Echo()
    docs = [Doc(id=str(i), query="q") for i in range(len(C))]
    answers = [[[Completion("yes" if j < c else f"no{j % 2}", "stop") for j in range(K)]] for c in C]
    samples = t.score_all(docs, answers, RunContext())
    assert [s.extra["repeats"]["n_correct"] for s in samples] == C
    assert samples[2].extra["repeats"]["correct"] == [1, 1, 0, 0]
    assert samples[2].responses == ["yes", "yes", "no0", "no1"]
    agg = t.aggregate(samples, seed=1)
    means = [c / K for c in C]
    se = 0.3952847075210474 / math.sqrt(5)   # sd of (1, 0, .5, .75, .25) over sqrt(5 problems)
    half = 2.7764451051977987 * se            # t(0.975, 4 df)
    for name in ("exact_match", "avg@4", "pass@1", "pass^1"):
        v = agg[name]
        assert v.value == pytest.approx(0.5) and v.n == 5 and v.stderr == pytest.approx(se)
        assert (v.ci_low, v.ci_high) == (pytest.approx(0.5 - half), pytest.approx(0.5 + half))
    assert v.stderr == pytest.approx(rp.clustered_se(CORRECT) * math.sqrt(5 / 4))
    p2 = [pass_at_k(K, c, 2) for c in C]
    assert agg["pass@2"].value == pytest.approx(sum(p2) / 5)
    assert agg["pass^2"].value == pytest.approx(sum(math.comb(c, 2) / 6 for c in C) / 5)
    assert agg["pass^4"].value == pytest.approx(0.2) and agg["pass@4"].value == pytest.approx(0.8)
    # maj@4: "yes" wins where c >= 3; c = 2 ties yes/no0? no: no0 and no1 split the wrong votes -> yes
    assert [s.metrics["maj@4"] for s in samples] == [1.0, 0.0, 1.0, 1.0, 0.0]
    assert {d["name"] for d in t.declared_metrics()} >= {"avg@4", "pass@4", "pass^4", "maj@4"}
    assert means == [s.metrics["avg@4"] for s in samples]
    assert t.run_extra(samples)["repeats"]["se_clustered"] == pytest.approx(rp.clustered_se(CORRECT))


def test_maj_at_k_votes_on_the_part_of_a_dict_answer_the_task_names(shared_data):
    """GSM8K and MATH extract dicts (strict/flexible numbers; answer/minerva): ``vote_kind`` picks what a
    vote compares, so their repeat runs report maj@K (written differently, the same number wins)."""
    from evalkit.taskapi.registry import get_task_class
    gsm = get_task_class("gsm8k")(str(shared_data / "gsm8k"))
    docs = [Doc(id="a", query="q", target="42"), Doc(id="b", query="q", target="7")]
    texts = {"a": ["The answer is 41.\n#### 41", "So #### 42", "#### 42.00", "It is $42"],   # 42 wins 3 to 1
             "b": ["#### 8", "#### 8", "#### 7", "nothing"]}                             # 8 wins, wrong
    answers = [[[Completion(t, "stop") for t in texts[d.id]]] for d in docs]
    rows = gsm.score_all(docs, answers, RunContext())
    assert [r.metrics["maj@4"] for r in rows] == [1.0, 0.0]
    assert rows[0].extra["repeats"]["majority_index"] == 1 and isinstance(rows[0].extracted[0], dict)

