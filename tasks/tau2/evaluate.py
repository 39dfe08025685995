"""τ²-bench's evaluator (``tau2/evaluator/evaluator.py``, ``evaluator_env.py``,
``evaluator_communicate.py``) on evalkit's transcripts.

* DB: the task's gold actions replayed on a fresh database in the sandbox (an action that fails is
  skipped, as τ²-bench logs and skips it); the trial's final database (the live state its tool calls
  left, which is what τ²-bench rebuilds by replaying the trajectory) must have the same hash.
* COMMUNICATE: each ``communicate_info`` string appears, lower-cased, in some agent message with its
  commas removed (the agent's opening message included).
* ENV_ASSERTION (telecom): each of the task's ``env_assertions`` (a function of the agent's or the
  customer's side, with its arguments, and the value it must return) holds on the trial's final
  state; evaluated in the sandbox when the snapshot is taken (``runtime_telecom.py``). For telecom
  the DB check covers both databases (the carrier's and the customer's phone), as τ²-bench's does.
* The reward is the product over the task's ``reward_basis`` (default DB and COMMUNICATE); a trial
  that did not end by the user's stop token gets 0 (``premature``), whatever its database.
* A task without ``evaluation_criteria`` gets 1; one with neither ``actions`` nor ``env_assertions``
  (null, not an empty list) passes DB unchecked, as in τ²-bench.
* ACTION checks (each gold action matched by a call, the agent's or the customer's, with the same
  name and, for its ``compare_args`` or else the call's own argument names, the same values) are
  reported for the
  breakdown; they count in the reward only when ``ACTION`` is in the basis, as in τ²-bench.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from evalkit.taskapi.agent import Transcript

from .env import domain_env

DEFAULT_BASIS = ("DB", "COMMUNICATE")


def basis(task: dict) -> tuple:
    return tuple((task.get("evaluation_criteria") or {}).get("reward_basis") or DEFAULT_BASIS)


def gold_actions(task: dict) -> list:
    return list((task.get("evaluation_criteria") or {}).get("actions") or [])


def replay(tools, domain: str, db_path, actions: list, env=None) -> tuple[str, list]:
    """(database hash, per action its result or error) after ``actions`` on a fresh database."""
    snap, outcomes = replay_snapshot(tools, env or domain_env(domain, db_path), actions)
    return snap["db_hash"], outcomes


def replay_snapshot(tools, env, actions: list) -> tuple[dict, list]:
    """(the environment's snapshot, per action its result or error) after ``actions`` (a customer's
    action, ``requestor`` user, as the customer's call) on a fresh environment."""
    state = tools.start(env).state
    outcomes = []
    for a in actions:
        name = ("user:" if a.get("requestor") == "user" else "") + a["name"]
        out = tools.call(env, state, name, a.get("arguments") or {})
        state = out.state
        outcomes.append({"error": out.error} if out.error is not None else {"result": out.result})
    return tools.snapshot(env, state), outcomes


def agent_texts(t: Transcript) -> list[str]:
    return [m.get("content") or "" for m in t.messages if m.get("role") == "assistant" and not m.get("tool_calls")
            and isinstance(m.get("content"), str)]


def communicate(task: dict, texts: list[str]) -> tuple[bool, list]:
    infos = (task.get("evaluation_criteria") or {}).get("communicate_info") or []
    checks = [{"info": info, "met": any(info.lower() in t.lower().replace(",", "") for t in texts)} for info in infos]
    return all(c["met"] for c in checks), checks


def action_checks(task: dict, calls: list) -> list:
    """τ²-bench's ``ActionEvaluator``: each gold action against the agent's calls."""
    return [{"action": a["name"], "arguments": a.get("arguments") or {}, "compare_args": a.get("compare_args"),
             "matched": any(action_matches(a, c) for c in calls)} for a in gold_actions(task)]


def action_matches(action: dict, call: dict) -> bool:
    """τ²-bench's ``Action.compare_with_tool_call`` (``tau2/data_model/tasks.py``): the same name, and
    the same values for ``compare_args`` -- or, when it is unset, for the keys of the CALL's arguments
    (so a call that leaves out an argument still matches); a key absent on both sides agrees."""
    if action.get("name") != call.get("name"):
        return False
    got = call.get("arguments") or {}
    keys = action.get("compare_args")
    keys = list(got) if keys is None else keys
    if not keys:
        return True
    want = action.get("arguments") or {}
    return {k: v for k, v in got.items() if k in keys} == {k: v for k, v in want.items() if k in keys}


def env_assertions(crit: dict, final: dict):
    """(all met, the checks) of the task's env assertions on the final snapshot; (None, None) when the
    environment does not evaluate them."""
    if not crit.get("env_assertions"):
        return True, []
    checks = final.get("env_assertions")
    return (None, None) if checks is None else (all(c["met"] for c in checks), checks)


def verdict(task: dict, t: Transcript, gold) -> dict:
    """Every component of one trial's reward, and the reward (``gold``: the gold replay's database
    hash, or its snapshot, whose every hash must match)."""
    final = (t.snapshots[-1] or {}) if t.snapshots else {}
    gold = gold if isinstance(gold, dict) else {"db_hash": gold}
    gold_hash = gold.get("db_hash")
    crit = task.get("evaluation_criteria")
    if crit is None:  # τ²-bench: "No evaluation criteria" gives 1
        return {"reward": 1.0, "basis": [], "db_match": True, "communicate": True, "communicate_details": [],
                "actions": [], "db_hash": final.get("db_hash"), "gold_db_hash": gold_hash,
                "changed": final.get("changed"), "unsupported_basis": None, "nl_assertions": None}
    # τ²-bench's EnvironmentEvaluator: no expected actions and no env assertions -> db_match without a check
    unchecked = crit.get("actions") is None and crit.get("env_assertions") is None
    db_ok = unchecked or all(final.get(k) == v for k, v in gold.items() if k.endswith("db_hash"))
    comm_ok, comm = communicate(task, agent_texts(t))
    acts = action_checks(task, t.calls() + t.user_calls())
    env_ok, env_checks = env_assertions(crit, final)
    parts = {"DB": db_ok, "COMMUNICATE": comm_ok, "ACTION": all(a["matched"] for a in acts)}
    if env_ok is not None:
        parts["ENV_ASSERTION"] = env_ok
    b = basis(task)
    unknown = [x for x in b if x not in parts]
    reward = float(all(parts[x] for x in b if x in parts)) if not unknown else 0.0
    return {"reward": reward, "basis": list(b), "db_match": db_ok, "communicate": comm_ok,
            "communicate_details": comm, "actions": acts, "db_hash": final.get("db_hash"), "gold_db_hash": gold_hash,
            "changed": final.get("changed"), "unsupported_basis": unknown or None,
            "env_assertion": env_ok, "env_assertions": env_checks, "action": parts["ACTION"],
            "nl_assertions": (task.get("evaluation_criteria") or {}).get("nl_assertions") or None}


def evaluate_trials(domain: str, db_path, tasks: list, responses: list, workers: int = 2, user_db_path=None) -> list:
    """Per task, the verdict of each of its trials (``responses[i]``: the task's transcripts)."""
    from evalkit.sandbox.tools import ToolSandbox

    def gold(task):
        snap = replay_snapshot(tools, domain_env(domain, db_path, task, user_db_path), gold_actions(task))[0]
        return {k: v for k, v in snap.items() if k.endswith("db_hash")}
    with ToolSandbox(workers=workers, timeout=60.0, memory_mb=2048) as tools, ThreadPoolExecutor(workers) as pool:
        golds = list(pool.map(gold, tasks))
    return [[verdict(task, t, gold) for t in transcripts] for task, transcripts, gold in zip(tasks, responses, golds)]
