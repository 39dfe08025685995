"""τ²-bench's evaluator rules in ``tasks/tau2/evaluate.py``, case by case against the rules of
sierra-research/tau2-bench (``Action.compare_with_tool_call`` in ``src/tau2/data_model/tasks.py``,
``evaluator_communicate.py``, ``evaluator_env.py``, ``evaluator.py``). No sandbox, no model: the
expected values below are what τ²-bench's code gives for the same inputs."""
import pytest

from evalkit.taskapi.agent import Transcript
from evalkit.tasks.tau2 import evaluate

GOLD = {"name": "cancel_reservation", "arguments": {"reservation_id": "ABC123", "reason": "x"}}


@pytest.mark.parametrize("call,compare_args,matched", [
    ({"name": "cancel_reservation", "arguments": {"reservation_id": "ABC123", "reason": "x"}}, None, True),
    ({"name": "cancel_reservation", "arguments": {"reservation_id": "ABC124", "reason": "x"}}, None, False),
    ({"name": "book_reservation", "arguments": {"reservation_id": "ABC123", "reason": "x"}}, None, False),
    # compare_args unset: the CALL's argument names are compared, so a call leaving one out matches ...
    ({"name": "cancel_reservation", "arguments": {"reservation_id": "ABC123"}}, None, True),
    # ... a call with no arguments at all matches by name ...
    ({"name": "cancel_reservation", "arguments": {}}, None, True),
    # ... and an extra argument the gold action lacks does not
    ({"name": "cancel_reservation", "arguments": {"reservation_id": "ABC123", "reason": "x", "y": 1}}, None, False),
    # compare_args set: only those keys; an empty list matches by name
    ({"name": "cancel_reservation", "arguments": {"reservation_id": "ABC123", "reason": "other"}},
     ["reservation_id"], True),
    ({"name": "cancel_reservation", "arguments": {"reason": "x"}}, ["reservation_id"], False),
    ({"name": "cancel_reservation", "arguments": {"reservation_id": "Z"}}, [], True),
    # a compared key absent on both sides agrees; present on one side only does not
    ({"name": "cancel_reservation", "arguments": {"reservation_id": "ABC123"}}, ["reservation_id", "note"], True),
])
def test_action_matches_follows_compare_with_tool_call(call, compare_args, matched):
    gold = dict(GOLD, compare_args=compare_args)
    assert evaluate.action_matches(gold, call) is matched
    task = {"evaluation_criteria": {"actions": [gold], "reward_basis": ["ACTION"]}}
    assert evaluate.action_checks(task, [{"name": "other", "arguments": {}}, call])[0]["matched"] is matched


def test_communicate_is_a_case_insensitive_substring_with_commas_removed_from_the_message():
    task = {"evaluation_criteria": {"communicate_info": ["1,628", "1628", "Refund"]}}
    ok, checks = evaluate.communicate(task, ["Your REFUND is $1,628.00"])
    # τ²-bench removes commas from the message only: "1,628" is never found, "1628" is
    assert [c["met"] for c in checks] == [False, True, True] and not ok
    assert evaluate.communicate({"evaluation_criteria": {"communicate_info": []}}, [])[0]


def transcript(db_hash, texts=(), calls=()):
    return Transcript(messages=[{"role": "assistant", "content": s} for s in texts],
                      turns=[{"user_turn": 0, "tool_calls": list(calls)}],
                      snapshots=[{"db_hash": db_hash}], stop_reason="user_stop")


def test_reward_is_the_product_over_the_reward_basis():
    crit = {"actions": [GOLD], "communicate_info": ["42"]}
    good = transcript("h", ["it is 42"], [GOLD])
    assert evaluate.verdict({"evaluation_criteria": crit}, good, "h")["reward"] == 1.0
    # default basis DB and COMMUNICATE: a wrong database or a missing info gives 0
    assert evaluate.verdict({"evaluation_criteria": crit}, transcript("other", ["42"], [GOLD]), "h")["reward"] == 0
    assert evaluate.verdict({"evaluation_criteria": crit}, transcript("h", ["41"], [GOLD]), "h")["reward"] == 0
    # ACTION counts only when in the basis; it is reported either way
    no_call = transcript("h", ["42"])
    v = evaluate.verdict({"evaluation_criteria": crit}, no_call, "h")
    assert v["reward"] == 1.0 and v["actions"][0]["matched"] is False
    with_action = dict(crit, reward_basis=["DB", "ACTION"])
    assert evaluate.verdict({"evaluation_criteria": with_action}, no_call, "h")["reward"] == 0.0
    assert evaluate.verdict({"evaluation_criteria": dict(crit, reward_basis=["COMMUNICATE"])},
                            transcript("other", ["42"]), "h")["reward"] == 1.0


def test_no_criteria_or_no_actions_and_no_env_assertions_are_not_checked():
    assert evaluate.verdict({"evaluation_criteria": None}, transcript("x"), "h")["reward"] == 1.0
    unchecked = {"actions": None, "env_assertions": None, "communicate_info": []}
    assert evaluate.verdict({"evaluation_criteria": unchecked}, transcript("x"), "h")["db_match"] is True
    # an empty action list is checked: the database must stay as it was
    empty = {"actions": [], "communicate_info": []}
    assert evaluate.verdict({"evaluation_criteria": empty}, transcript("x"), "h")["reward"] == 0.0
