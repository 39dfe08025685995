"""Budget figures over every completion of a repeat run (``--repeats K``), not only the first: a GSM8K
run where a scripted model's K=4 completions per item are mixed (finished right or wrong, cut at
max_tokens inside the trace or after the answer), every share and the finished/truncated split checked
by hand, the per-completion record, and a cached rerun reporting the same figures."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from evalkit.records import load_run
from evalkit.run.cache import NullCache, ResponseCache
from evalkit.run.config import RunConfig
from evalkit.run.runner import evaluate
from evalkit.run.repeats_split import sample_params
from evalkit.scoring.budgets import task_budget
from evalkit.taskapi.requests import Completion
from _fakes import ScriptedBackend

K = 4
# per item, what each of its K completions does (in sample order):
# R right and finished, W wrong and finished, T cut at max_tokens inside the trace (unclosed, no answer),
# A cut at max_tokens after a right answer
PLAN = ["RRRR", "RTRW", "TTTT", "RAWW", "RRAT", "WWWW"]
USAGE = {"prompt_tokens": 10, "completion_tokens": 7, "reasoning_tokens": 3}


def _text(kind: str, gold: str) -> tuple[str, str]:
    return {"R": (f"<think>a b c</think>\n#### {gold}", "stop"),
            "W": ("<think>a b</think>\n#### 123456789", "stop"),
            "T": ("<think>a b c d e", "length"),
            "A": (f"<think>a</think>\n#### {gold} and then on and on", "length")}[kind]


def mixed(golds: list) -> ScriptedBackend:
    """Completion j of item i follows PLAN[i][j]; j is found from the seeds its prompt has in the chunk
    (sample 0 keeps the request's seed, sample j > 0 has the one ``sample_params`` derives), never from
    arrival order."""
    def reply(r):
        i = next(k for k, q in enumerate(golds) if q[0] in r.prompt)
        j = _index(r, {q.params.seed for q in backend.calls[-1][1] if q.prompt == r.prompt})
        text, finish = _text(PLAN[i][j], golds[i][1])
        return Completion(text, finish, usage=dict(USAGE))
    backend = ScriptedBackend(reply, name="mixed-repeats")
    return backend


def _index(r, seeds: set) -> int:
    if len(seeds) == 1:                                                        # one sample: sample 0's seed
        return 0
    for s0 in seeds:
        order = [sample_params(replace(r.params, seed=s0), j).seed for j in range(K)]
        if set(order) == seeds:
            return order.index(r.params.seed)
    raise AssertionError("the K samples of a prompt were not asked together")


def _config(shared_data) -> RunConfig:
    return RunConfig(tasks=["gsm8k"], limit=len(PLAN), num_fewshot=0, gen_overrides={"n": K, "temperature": 0.6},
                     data_paths={"gsm8k": str(shared_data / "gsm8k")})


@pytest.fixture(scope="module")
def golds(shared_data):
    rows = [json.loads(x) for x in open(shared_data / "gsm8k" / "test.jsonl")][:len(PLAN)]
    return [(r["question"], r["answer"].split("####")[-1].strip()) for r in rows]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("repeat-budgets")


@pytest.fixture(scope="module")
def run(workdir, shared_data, golds):
    rec = evaluate(mixed(golds), _config(shared_data), ResponseCache(workdir / "c.sqlite"), str(workdir / "results"),
                   progress=False)
    return load_run(rec.path)


def _count(kinds: str) -> int:
    return sum(p.count(k) for p in PLAN for k in kinds)


def test_every_completion_counts_by_hand(run):
    b = run.tasks["gsm8k"].budget
    n = len(PLAN) * K                                                          # 24 completions of 6 samples
    assert b["n"] == n == 24 and b["samples"] == len(PLAN)
    assert b["hit_token_limit"] == pytest.approx(_count("TA") / n) == pytest.approx(8 / 24)
    assert b["unclosed_trace"] == pytest.approx(_count("T") / n) == pytest.approx(6 / 24)
    assert b["no_answer"] == pytest.approx(6 / 24)                             # the unclosed ones only
    assert b["with_trace"] == 1.0
    # traces: "a b c" (R, 9 of them), "a b c d e" (T, 6), "a" (A, 2), "a b" (W, 7)
    assert b["mean_trace_chars"] == pytest.approx((9 * 5 + 6 * 9 + 2 * 1 + 7 * 3) / 24)
    assert b["mean_trace_tokens"] == 3 and b["mean_answer_tokens"] == 4 and b["token_source"] == "usage"
    assert b["usage"] == {"prompt_tokens": 10 * n, "completion_tokens": 7 * n, "reasoning_tokens": 3 * n}
    first_only = [p[0] for p in PLAN]                                          # what the first completions say
    assert sum(k in "TA" for k in first_only) / len(PLAN) == pytest.approx(1 / 6)     # not 1/3


def test_finished_and_truncated_split_over_completions_by_hand(run):
    b = run.tasks["gsm8k"].budget
    s = b["split"]["exact_match_strict"]
    assert s["finished"]["n"] == 16 and s["finished"]["value"] == pytest.approx(9 / 16)      # 9 R, 7 W
    assert s["truncated"]["n"] == 8 and s["truncated"]["value"] == pytest.approx(2 / 8)      # 2 A, 6 T
    assert s["overall"]["n"] == 24 and s["overall"]["value"] == pytest.approx(11 / 24)
    assert s["overall"]["value"] == pytest.approx(run.metrics("gsm8k")["exact_match_strict"].value)
    for part in ("overall", "finished", "truncated"):
        assert s[part]["ci_low"] <= s[part]["value"] <= s[part]["ci_high"]
    # the interval is over the 6 problems, not 24 independent completions: wider than a Wilson one on 24
    from evalkit.scoring.stats import mean_metric
    flat = mean_metric([1.0] * 11 + [0.0] * 13)
    assert s["overall"]["ci_high"] - s["overall"]["ci_low"] > flat.ci_high - flat.ci_low
    assert any("16 finished responses" in w and "(33%)" in w for w in b["warnings"])


def test_each_sample_records_its_completions(run):
    rows = list(run.samples("gsm8k"))
    for row, plan in zip(rows, PLAN):
        comps = row["extra"]["completions"]
        assert [c["finish_reason"] for c in comps] == ["length" if k in "TA" else "stop" for k in plan]
        assert [c["status"] for c in comps] == ["unclosed" if k == "T" else "closed" for k in plan]
        assert all(c["trace_tokens"] == 3 and c["answer_tokens"] == 4 for c in comps)
        assert row["extra"]["finish_reason"] == comps[0]["finish_reason"]                  # the first, as before
        assert row["extra"]["thinking"]["status"] == comps[0]["status"]
        assert row["extra"]["usage"] == {k: K * v for k, v in USAGE.items()}             # summed over the K
    assert task_budget(rows) == run.tasks["gsm8k"].budget                   # figures from the rows alone


def test_a_cached_rerun_reports_the_same_figures(run, workdir, shared_data, golds, tmp_path):
    again = mixed(golds)
    rec = evaluate(again, _config(shared_data), ResponseCache(workdir / "c.sqlite"), str(tmp_path), progress=False)
    assert again.requests == []
    assert load_run(rec.path).tasks["gsm8k"].budget == run.tasks["gsm8k"].budget


def test_one_completion_per_sample_records_no_completion_list(shared_data, golds, tmp_path):
    cfg = _config(shared_data)
    cfg.gen_overrides = {"temperature": 0.6}
    rec = load_run(evaluate(mixed(golds), cfg, NullCache(), str(tmp_path), progress=False).path)
    rows = list(rec.samples("gsm8k"))
    assert not any("completions" in r["extra"] for r in rows)
    b = rec.tasks["gsm8k"].budget
    assert b["n"] == len(PLAN) and "samples" not in b
    assert b["hit_token_limit"] == pytest.approx(sum(p[0] in "TA" for p in PLAN) / len(PLAN))
    assert rows[0]["extra"]["usage"] == USAGE
