"""The agent loop with a scripted model: transcripts, errors given back to the model, limits, the
sandbox containing hostile tool calls, and a killed run resumed from the cache turn by turn."""
from __future__ import annotations

import json
import os

import pytest

import _bank  # noqa: F401 (registers agent_bank_test)
from _fakes import ScriptedBackend
import evalkit
from evalkit.taskapi import tool_parsers

TASK = "agent_bank_test"


def scripted(script, fail_after=None, model="scripted-agent"):
    """Replies are ``script(messages)``; parsed with the request's parser as a local backend does."""
    return ScriptedBackend(lambda r: script(r.message_dicts()), identity={"model": model},
                           usage={"completion_tokens": 7}, fail_after=fail_after)


def call(name, **args) -> str:
    return f'<tool_call>{{"name": "{name}", "arguments": {json.dumps(args)}}}</tool_call>'


def banker(msgs):
    last, user = msgs[-1], [m for m in msgs if m["role"] == "user"][-1]["content"]
    if last["role"] == "tool":
        return "Done: " + last["content"]
    if "balance?" in user:
        return call("get_balance")
    if "Deposit 5" in user:
        return call("deposit", amount=5) + "\n" + call("get_balance")
    return call("deposit", amount=7) + call("write_note", path="notes.txt", text="done")


def run(backend, cache_dir=None, data=None, **task_args):
    out = evalkit.evaluate(model=backend, tasks=[TASK], output=None, cache=cache_dir is not None,
                           cache_dir=str(cache_dir) if cache_dir else None, task_args={TASK: task_args},
                           data={TASK: str(data)} if data else None)
    return out.tasks[TASK], out.samples[TASK]


def one_doc(tmp_path, turns=("Hello",)):
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps({"id": "x", "balance": 10, "turns": list(turns), "want": 10}) + "\n")
    return path


def stable(transcript: dict) -> dict:
    """A transcript without its timings (the agent's turns and the simulated user's replies)."""
    def untimed(items):
        return [{k: v for k, v in t.items() if not k.endswith("seconds")} for t in items]
    out = {**{k: v for k, v in transcript.items() if k != "seconds"}, "turns": untimed(transcript["turns"])}
    if "user_replies" in transcript:
        out["user_replies"] = untimed(transcript["user_replies"])
    return out


def test_a_scripted_agent_plays_every_user_turn_with_tools_in_the_sandbox():
    entry, rows = run(scripted(banker))
    assert entry.metrics["balance_ok"].value == 1.0
    b1 = rows[0]["responses"][0]
    roles = [m["role"] for m in b1["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user", "assistant", "tool", "tool", "assistant"]
    second = b1["messages"][6]
    assert [c["id"] for c in second["tool_calls"]] == ["call_2_0", "call_2_1"]
    assert json.loads(second["tool_calls"][0]["function"]["arguments"]) == {"amount": 5}
    assert [m.get("tool_call_id") for m in b1["messages"][7:9]] == ["call_2_0", "call_2_1"]
    assert [json.loads(m["content"]) for m in b1["messages"][7:9]] == [{"balance": 15}, {"balance": 15}]
    assert b1["responses"] == ['Done: {"balance": 10}', 'Done: {"balance": 15}']
    assert [s["balance"] for s in b1["snapshots"]] == [10, 15] and b1["stop_reason"] == "done"
    b2 = rows[1]["responses"][0]
    assert b2["snapshots"][0]["files"] == ["notes.txt"]  # the episode's own state directory
    assert rows[0]["metrics"]["turns"] == 4 and rows[0]["metrics"]["tool_calls"] == 3
    assert rows[0]["metrics"]["tokens"] == 28 and rows[0]["prompt"][0]["role"] == "system"


def test_bad_calls_are_given_back_to_the_model_and_counted(tmp_path):
    replies = iter([call("get_balance") + call("withdraw_all") + call("deposit", amount="5")
                    + '<tool_call>{"name": "read_note", "arguments": "not json"}</tool_call>',
                    call("deposit", amount=-1) + call("read_note", path="missing.txt"),
                    '<tool_call>{"name": broken json</tool_call>', "fine"])
    _, rows = run(scripted(lambda msgs: next(replies)), data=one_doc(tmp_path), max_steps=5)
    row = rows[0]
    turns = row["responses"][0]["turns"]
    results = [r for t in turns for r in t["results"]]
    assert "result" in results[0]
    assert "unknown function 'withdraw_all'" in results[1]["error"]
    assert "ValueError: amount must be a positive number" in results[2]["error"]  # "5": ran, refused
    assert results[3]["error"] == "the arguments are not a JSON object"
    assert "ValueError" in results[4]["error"] and "FileNotFoundError" in results[5]["error"]
    assert turns[2]["parse_error"].startswith("hermes: JSONDecodeError")
    m = row["metrics"]
    assert (m["unknown_function"], m["invalid_call_format"], m["wrong_arg_type"], m["tool_errors"]) == (1, 2, 1, 3)
    tool_msgs = [x for x in row["responses"][0]["messages"] if x["role"] == "tool"]
    assert tool_msgs[1]["content"].startswith("Error: unknown function")


def test_hostile_tool_calls_are_contained_and_recorded_as_tool_errors(tmp_path):
    outside = tmp_path / "escaped.txt"
    codes = [f"open({str(outside)!r}, 'w').write('x')",          # the host's file system
             "open('/etc/evalkit_escape', 'w').write('x')",
             "import socket; socket.create_connection(('1.1.1.1', 80), timeout=2)",
             "import os\nwhile True: os.fork()",
             "x = bytearray(8 << 30)",
             "open('../../../escape.txt', 'w').write('x')"]     # outside the state directory
    replies = iter([call("run_python", code=c) for c in codes] + [call("read_note", path="../../../escape.txt"), "ok"])
    _, rows = run(scripted(lambda msgs: next(replies)), data=one_doc(tmp_path), max_steps=10)
    results = [r for t in rows[0]["responses"][0]["turns"] for r in t["results"]]
    assert all("error" in r for r in results[:5]), results
    assert not outside.exists() and not os.path.exists("/etc/evalkit_escape")
    assert "error" in results[6]  # whatever landed outside the state directory did not outlive its call
    assert rows[0]["responses"][0]["snapshots"][0]["balance"] == 10  # the state survived every kill


def test_an_episode_ends_at_its_step_limit(tmp_path):
    _, rows = run(scripted(lambda msgs: call("get_balance")), data=one_doc(tmp_path, ("a", "b")), max_steps=3)
    t = rows[0]["responses"][0]
    assert t["stop_reason"] == "max_steps" and len(t["turns"]) == 3 and len(t["snapshots"]) == 1


def test_a_killed_run_resumes_at_the_turn_it_reached(tmp_path):
    whole = scripted(banker)
    _, reference = run(whole, tmp_path / "fresh")
    killed = scripted(banker, fail_after=3)
    with pytest.raises(KeyboardInterrupt):
        run(killed, tmp_path / "cache")
    again = scripted(banker)
    _, rows = run(again, tmp_path / "cache")
    assert len(again.requests) == len(whole.requests) - 2  # the first round (2 turns) came from the cache
    assert [stable(r["responses"][0]) for r in rows] == [stable(r["responses"][0]) for r in reference]
    cached = scripted(banker)
    run(cached, tmp_path / "cache")
    assert cached.requests == []


@pytest.mark.parametrize("name", ["hermes", "pythonic"])
def test_parsers_read_as_vllms_do(name):
    pytest.importorskip("vllm")
    from transformers import PreTrainedTokenizerFast
    from tokenizers import Tokenizer, models
    from evalkit.backends.tool_chat import vllm_parse
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"a": 0}, unk_token="a")))
    texts = {"hermes": ['<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>', "no call",
                        'Sure.\n<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>\n<tool_call>{"name": "g", '
                        '"arguments": {"x": [1, "y"]}}</tool_call>', '<tool_call>{"name": "f", "arguments": {"a": 1}}',
                        '<tool_call>{"name": f}</tool_call>', '<tool_call>{"arguments": {}}</tool_call>'],
             "pythonic": ['[f(a=1, b="x")]', '[f(), g(c=[1, 2], d={"k": null}, e=-3.5)]', "no call",
                          '[f(a=1)] trailing', '[f(a=g(1))]', '[mod.f(a=true)]', "[f(1)]", '[f(a=(1, 2))]']}[name]
    for text in texts:
        ours, theirs = tool_parsers.parse(name, text, []), vllm_parse(tok, name, text, [])
        assert (ours.calls, ours.content or "", bool(ours.error)) == (theirs.calls, theirs.content or "", bool(theirs.error)), text


def customer(msgs):
    """A simulated customer: asks for each wish in its system prompt in turn, then says ###STOP###."""
    assert msgs[0]["role"] == "system" and all(m["role"] in ("user", "assistant") for m in msgs[1:])
    assert not any("tool_calls" in m for m in msgs)  # the agent's calls are never shown to the user
    wishes = msgs[0]["content"].split("Ask for: ")[1].split(" Then: ")
    said = sum(m["role"] == "assistant" for m in msgs[1:])
    return wishes[said] if said < len(wishes) else "Thanks! ###STOP###"


def scripted_user():
    return scripted(customer, model="scripted-user")


def test_a_simulated_user_talks_with_the_agent_until_it_stops(tmp_path):
    agent, user = scripted(banker), scripted_user()
    out = evalkit.evaluate(model=agent, user_model=user, tasks=[TASK], output=str(tmp_path / "out"),
                           cache_dir=str(tmp_path / "c"), task_args={TASK: {"simulated_user": "true"}})
    rows = out.samples[TASK]
    t = rows[0]["responses"][0]
    roles = [m["role"] for m in t["messages"]]
    assert roles == ["system", "assistant", "user", "assistant", "tool", "assistant", "user", "assistant", "tool",
                     "tool", "assistant", "user"]
    assert t["messages"][1]["content"] == "Hi! How can I help you today?"
    assert [m["content"] for m in t["messages"] if m["role"] == "user"] == [
        "What is my balance?", "Deposit 5, then tell me the balance.", "Thanks! ###STOP###"]
    assert t["stop_reason"] == "user_stop" and len(t["user_replies"]) == 3
    assert len(t["snapshots"]) == 1 and t["snapshots"][0]["balance"] == 15
    assert [x["user_turn"] for x in t["turns"]] == [0, 0, 1, 1]
    # the user's view: the agent's text as "user", its own as "assistant", calls and results hidden
    first = user.requests[0].message_dicts()
    assert [m["role"] for m in first] == ["system", "user"] and first[1]["content"] == "Hi! How can I help you today?"
    assert out.user_model["identity"] == {"model": "scripted-user"} and out.engine["user_model"]["computed"] == 5
    assert out.tasks[TASK].metrics["balance_ok"].value == 1.0
    # a rerun replays both models from the cache: the same transcripts, nothing computed
    again = evalkit.evaluate(model=scripted(banker), user_model=scripted_user(), tasks=[TASK], output=None,
                             cache_dir=str(tmp_path / "c"), task_args={TASK: {"simulated_user": "true"}})
    assert [stable(r["responses"][0]) for r in again.samples[TASK]] == [stable(r["responses"][0]) for r in rows]
    assert again.engine.get("computed", 0) == 0 and again.engine["user_model"].get("computed", 0) == 0
    assert again.engine["user_model"]["cached"] == 5


def test_a_simulated_conversation_ends_at_its_message_limit_and_on_an_empty_user_reply(tmp_path):
    out = evalkit.evaluate(model=scripted(banker), user_model=scripted_user(), tasks=[TASK], output=None, cache=False,
                           task_args={TASK: {"simulated_user": "true", "max_messages": "4"}})
    t = out.samples[TASK][0]["responses"][0]
    assert t["stop_reason"] == "max_steps" and len(t["snapshots"]) == 1
    silent = scripted(lambda msgs: "   ")
    out = evalkit.evaluate(model=scripted(banker), user_model=silent, tasks=[TASK], output=None, cache=False,
                           task_args={TASK: {"simulated_user": "true"}})
    assert out.samples[TASK][0]["responses"][0]["stop_reason"] == "user_error"
    # without a user model, the agent's model plays the user too, and the record says so
    out = evalkit.evaluate(model=scripted(lambda msgs: "###STOP###" if msgs[0]["content"].startswith("You are a bank "
                           "customer") else "Hello"), tasks=[TASK], output=None, cache=False,
                           task_args={TASK: {"simulated_user": "true"}})
    assert out.user_model["same_as_model"] is True
    assert out.samples[TASK][0]["responses"][0]["stop_reason"] == "user_stop"


def test_a_reply_of_ten_thousand_calls_runs_at_most_the_cap_and_counts_the_rest(tmp_path):
    """#52 item 2: one reply with 10,000 tool calls stalled a multi-turn run (a sandbox job each). At most
    ``max_calls_per_reply`` run (64), the rest are cut and counted in the turn; the run goes on."""
    import time
    from evalkit.taskapi.agent import MAX_CALLS_PER_REPLY
    flood = "".join(call("get_balance") for _ in range(10_000))
    replies = iter([flood, "fine"])
    t0 = time.monotonic()
    _, rows = run(scripted(lambda msgs: next(replies)), data=one_doc(tmp_path), max_steps=5)
    assert time.monotonic() - t0 < 120
    t = rows[0]["responses"][0]
    first = t["turns"][0]
    assert len(first["tool_calls"]) == MAX_CALLS_PER_REPLY == 64 and first["calls_cut"] == 10_000 - 64
    assert len([m for m in t["messages"] if m["role"] == "tool"]) == 64
    assert t["responses"] == ["fine"] and rows[0]["metrics"]["tool_calls"] == 64
