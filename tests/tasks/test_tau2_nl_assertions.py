"""τ²-bench's natural-language assertions judged with ``--judge``: the judge's requests (τ²-bench's
prompt on the trajectory), its verdicts parsed as τ²-bench reads them, the ``nl_assertions`` metric,
``nl_in_reward``, the judge named in the record and cached under its own identity."""
from __future__ import annotations

import json

import pytest

import evalkit
from evalkit.taskapi.agent import Transcript
from evalkit.tasks.tau2 import nl_assertions as nl

from _fakes import ScriptedBackend
from test_tau2 import customer, gold_agent, tasks_by_tag

pytest.importorskip("inspect_evals", reason="τ²-bench's data ships in inspect-evals (pip install --no-deps)")


def test_prompt_is_tau2_benchs():
    t = Transcript(messages=[{"role": "system", "content": "policy"},
                             {"role": "assistant", "content": "Hi! How can I help you today?"},
                             {"role": "user", "content": "Cancel my flight."},
                             {"role": "assistant", "content": None, "tool_calls": [{"name": "x", "arguments": {}}]},
                             {"role": "tool", "content": '{"ok": true}'}])
    task = {"evaluation_criteria": {"nl_assertions": ["Agent should not cancel", "Agent explains why"]}}
    req = nl.request(task, t)
    (srole, system), (urole, user) = req.messages
    assert (srole, urole) == ("system", "user") and system.startswith("\n        TASK\n        - You will be given")
    assert user == ("\n        conversation:\n        assistant: Hi! How can I help you today?\nuser: Cancel my flight."
                    "\nassistant: None\ntool: {\"ok\": true}\n        \n        expectedOutcomes:\n        "
                    "['Agent should not cancel', 'Agent explains why']\n        ")
    assert req.params.temperature == 0.0
    assert nl.request({"evaluation_criteria": {}}, t) is None


def test_verdicts_as_tau2_bench_reads_them():
    ok = {"results": [{"expectedOutcome": "a", "reasoning": "r", "metExpectation": True},
                      {"expectedOutcome": "b", "reasoning": "r", "metExpectation": True}]}
    assert nl.verdict(json.dumps(ok))["met"] is True
    ok["results"][1]["metExpectation"] = False
    v = nl.verdict("Here you go:\n```json\n" + json.dumps(ok) + "\n```")
    assert v["met"] is False and v["status"] == "judged" and [c["met"] for c in v["checks"]] == [True, False]
    assert nl.verdict('{"results": []}')["met"] is True       # τ²-bench's all() over no results
    assert nl.verdict("I think the agent did fine.") == {"met": False, "checks": [], "status": "unparsed"}


def _verdicts(r) -> str:
    user = r.messages[-1][1]
    names = eval(user.rsplit("expectedOutcomes:\n", 1)[1].strip())  # the Python list τ²-bench writes
    met = user.count("\nassistant: None") <= 2 and "Done." in user
    return json.dumps({"results": [{"expectedOutcome": a, "reasoning": "-", "metExpectation": met} for a in names]})


def scripted_judge() -> ScriptedBackend:
    """Meets every assertion when the agent made at most two tool calls (a rule that splits the first tasks)."""
    return ScriptedBackend(_verdicts, name="scripted-judge", identity={"model": "judge"})


def test_judged_run(tmp_path):
    by_tag = tasks_by_tag("airline")
    judge = scripted_judge()
    common = dict(model=gold_agent(by_tag), user_model=customer(), tasks=["tau2_airline"], limit=6,
                  cache_dir=str(tmp_path / "cache"), output=str(tmp_path / "results"))
    run = evalkit.evaluate(judge=judge, **common)
    rows = run.samples["tau2_airline"]
    assert len(judge.requests) == 6 and run.judge["identity"] == {"model": "judge"}
    assert run.judge_engine["computed"] == 6
    vals = [r["metrics"]["nl_assertions"] for r in rows]
    assert vals == [1.0, 1.0, 0.0, 1.0, 0.0, 1.0]  # the first six tasks have 0, 2, 4, 2, 6, 1 gold actions
    assert run.tasks["tau2_airline"].metrics["nl_assertions"].value == pytest.approx(sum(vals) / 6)
    assert all(r["metrics"]["reward"] == 1.0 for r in rows), "not in the reward unless asked"
    assert all(r["extra"]["nl_judge_status"] == "judged" and r["extra"]["nl_assertion_checks"] for r in rows)
    again = evalkit.evaluate(judge=scripted_judge(), task_args={"tau2_airline": {"nl_in_reward": "true"}}, **common)
    assert again.judge_engine["cached"] == 6 and again.judge_engine.get("computed", 0) == 0
    assert [r["metrics"]["reward"] for r in again.samples["tau2_airline"]] == vals
    plain = evalkit.evaluate(**common)
    assert plain.judge is None and "nl_assertions" not in plain.tasks["tau2_airline"].metrics
    assert "judge" not in plain.tasks["tau2_airline"].extra and all("judged" not in r["extra"]
                                                                     for r in plain.samples["tau2_airline"])


def test_the_assertions_are_a_judged_metric_of_the_shared_layer(tmp_path):
    """The record of the judge layer (kind, verdicts, prompt hash) per sample and its reliability
    figures in the task's entry, as every judged benchmark has them; several trials: one record
    with a verdict per trial."""
    by_tag = tasks_by_tag("airline")
    common = dict(model=gold_agent(by_tag), user_model=customer(), tasks=["tau2_airline"], limit=3,
                  cache_dir=str(tmp_path / "cache"), output=None)
    run = evalkit.evaluate(judge=scripted_judge(), **common)
    rows = run.samples["tau2_airline"]
    for r in rows:
        rec = r["extra"]["judged"]["nl_assertions"]
        assert rec["kind"] == "reference" and rec["asks"] == 1 and rec["parse_failures"] == []
        assert rec["verdicts"]["nl"]["met"] == bool(r["metrics"]["nl_assertions"]) and len(rec["prompt_sha256"]) == 64
    rel = run.tasks["tau2_airline"].extra["judge"]["nl_assertions"]
    assert rel["asks"] == 3 and rel["parse_failures"] == 0 and rel["kind"] == "reference"
    twice = evalkit.evaluate(judge=scripted_judge(), task_args={"tau2_airline": {"trials": 2}}, **common)
    for r, one in zip(twice.samples["tau2_airline"], rows):
        rec = r["extra"]["judged"]["nl_assertions"]
        assert rec["asks"] == 2 and set(rec["verdicts"]) == {"0:nl", "1:nl"} and rec["answers"] == 2
        assert r["metrics"]["nl_assertions"] == one["metrics"]["nl_assertions"]
    assert twice.tasks["tau2_airline"].extra["judge"]["nl_assertions"]["asks"] == 6
