"""A reward model as the MT-Bench judge (``--judge reward:hf:PATH``): higher reward wins, both
orders agree, ratings are rewards, reliability figures as for LLM judges, everything cached.

The judge is the reward-model fixture, whose rewards are NOISE: this proves the plumbing (the
verdict follows the rewards, the record names the reward model), not judging quality.
"""
from __future__ import annotations

import json

import pytest

from evalkit.cli import main
from tests.conftest import shared


@pytest.fixture(scope="module")
def rm_dir():
    pytest.importorskip("transformers")
    from _reward_session import fixture_dir
    return fixture_dir()


@pytest.mark.slow
def test_mt_bench_with_a_reward_model_judge(tmp_path, rm_dir, capsys):
    mt = shared("mt_bench")
    out, cache = tmp_path / "results", tmp_path / "cache"
    args = ["mt-bench", "--answers", str(mt / "model_answer" / "alpaca-13b.jsonl"),
            "--answers", str(mt / "model_answer" / "vicuna-13b-v1.3.jsonl"), "--baseline", "alpaca-13b",
            "--mode", "single,pairwise", "--judge", f"reward:hf:{rm_dir}", "--judge-args", "margin=0.0",
            "--data", str(mt), "--questions", "81", "--output", str(out), "--cache-dir", str(cache)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "win_rate" in printed and "reward:smollm2-135m-yesno-rm" in printed
    runs = {json.loads((p / "run.json").read_text())["model"]["name"]: p for p in out.iterdir()}
    vic = json.loads((runs["vicuna-13b-v1.3"] / "run.json").read_text())
    judge = vic["tasks"]["mt_bench"]["extra"]["judge"]
    # rewards are not 1-10 judge scores: named apart, so no leaderboard figure mixes the two
    names = set(vic["tasks"]["mt_bench"]["metrics"])
    assert {"reward", "reward_turn1", "win_rate"} <= names and not any(n.startswith("score") for n in names)
    assert "not MT-Bench's 1-10 scale" in vic["tasks"]["mt_bench"]["extra"]["score_note"]
    assert judge["kind"] == "reward_model" and judge["pooling"]["activation"] == "none"
    assert judge["pairwise"]["swap_disagreement_rate"] == 0.0   # a reward does not depend on the order
    assert judge["single"]["parse_failures"] == 0 and "length_spearman" in judge["single"]  # reward vs answer length (None under 3 points)
    # the verdicts follow the rewards the reward model gives the same conversations
    from evalkit.backends.reward_hf import HFRewardBackend
    from evalkit.taskapi.requests import RewardRequest
    q = next(json.loads(x) for x in (mt / "question.jsonl").read_text().splitlines() if json.loads(x)["question_id"] == 81)
    ans = {}
    for name, f in (("vicuna-13b-v1.3", "vicuna-13b-v1.3.jsonl"), ("alpaca-13b", "alpaca-13b.jsonl")):
        row = next(json.loads(x) for x in (mt / "model_answer" / f).read_text().splitlines()
                   if json.loads(x)["question_id"] == 81)
        ans[name] = row["choices"][0]["turns"]
    hf = HFRewardBackend(rm_dir)
    r = {n: hf.reward([RewardRequest(messages=(("user", q["turns"][0]), ("assistant", a[0])))])[0] for n, a in ans.items()}
    battles = [json.loads(x) for x in (runs["vicuna-13b-v1.3"] / "battles_mt_bench.jsonl").read_text().splitlines()]
    t1 = next(b for b in battles if b["turn"] == 1)
    assert t1["winner"] == ("model_a" if r["vicuna-13b-v1.3"] > r["alpaca-13b"] else "model_b")
    rows = [json.loads(x) for x in (runs["vicuna-13b-v1.3"] / "samples_mt_bench.jsonl").read_text().splitlines()]
    turn1 = next(j for j in rows[0]["extra"]["judgments"] if j["turn"] == 1)
    assert abs(turn1["value"] - r["vicuna-13b-v1.3"]) < 1e-4   # the rating is the reward
    # a rerun judges nothing anew
    assert main(args[:-4] + ["--output", str(tmp_path / "again"), "--cache-dir", str(cache)]) == 0
    again = json.loads(next((tmp_path / "again").iterdir()).joinpath("run.json").read_text())
    assert again["judge_engine"].get("computed", 0) == 0 and again["judge_engine"]["cached"] > 0


def test_reward_judge_spec_errors(capsys):
    answers = str(shared("mt_bench") / "model_answer" / "alpaca-13b.jsonl")
    assert main(["mt-bench", "--answers", answers, "--judge", "reward:foo:bar"]) == 2
    assert "--judge reward:" in capsys.readouterr().err
