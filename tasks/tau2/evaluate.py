"""τ²-bench's evaluator (``tau2/evaluator/evaluator.py``, ``evaluator_env.py``,
``evaluator_communicate.py``) on evalkit's transcripts.

* DB: the task's gold actions replayed on a fresh database in the sandbox (an action that fails is
  skipped, as τ²-bench logs and skips it); the trial's final database (the live state its tool calls
  left, which is what τ²-bench rebuilds by replaying the trajectory) must have the same hash.
* COMMUNICATE: each ``communicate_info`` string appears, lower-cased, in some agent message with its
  commas removed (the agent's opening message included).
* The reward is the product over the task's ``reward_basis`` (default DB and COMMUNICATE); a trial
  that did not end by the user's stop token gets 0 (``premature``), whatever its database.
* ACTION checks (each gold action matched by a call with the same name and, for its
  ``compare_args`` or all its arguments, the same values) are reported for the breakdown; they count
  in the reward only when ``ACTION`` is in the basis, as in τ²-bench.
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


def replay(tools, domain: str, db_path, actions: list) -> tuple[str, list]:
    """(database hash, per action its result or error) after ``actions`` on a fresh database."""
    env = domain_env(domain, db_path)
    state = tools.start(env).state
    outcomes = []
    for a in actions:
        out = tools.call(env, state, a["name"], a.get("arguments") or {})
        state = out.state
        outcomes.append({"error": out.error} if out.error is not None else {"result": out.result})
    return tools.snapshot(env, state)["db_hash"], outcomes


def agent_texts(t: Transcript) -> list[str]:
    return [m.get("content") or "" for m in t.messages if m.get("role") == "assistant" and not m.get("tool_calls")
            and isinstance(m.get("content"), str)]


def communicate(task: dict, texts: list[str]) -> tuple[bool, list]:
    infos = (task.get("evaluation_criteria") or {}).get("communicate_info") or []
    checks = [{"info": info, "met": any(info.lower() in t.lower().replace(",", "") for t in texts)} for info in infos]
    return all(c["met"] for c in checks), checks


def action_checks(task: dict, calls: list) -> list:
    """τ²-bench's ``ActionEvaluator``: each gold action against the agent's calls."""
    out = []
    for a in gold_actions(task):
        keys = a.get("compare_args")
        want = a.get("arguments") or {}
        keys = list(want) if keys is None else keys
        hit = any(c.get("name") == a["name"] and all((c.get("arguments") or {}).get(k) == want.get(k) for k in keys)
                  for c in calls)
        out.append({"action": a["name"], "arguments": {k: want.get(k) for k in keys}, "matched": hit})
    return out


def verdict(task: dict, t: Transcript, gold_hash: str) -> dict:
    """Every component of one trial's reward, and the reward."""
    final = (t.snapshots[-1] or {}) if t.snapshots else {}
    db_ok = final.get("db_hash") == gold_hash
    comm_ok, comm = communicate(task, agent_texts(t))
    acts = action_checks(task, t.calls())
    parts = {"DB": db_ok, "COMMUNICATE": comm_ok, "ACTION": all(a["matched"] for a in acts)}
    b = basis(task)
    unknown = [x for x in b if x not in parts]
    reward = float(all(parts[x] for x in b if x in parts)) if not unknown else 0.0
    return {"reward": reward, "basis": list(b), "db_match": db_ok, "communicate": comm_ok,
            "communicate_details": comm, "actions": acts, "db_hash": final.get("db_hash"), "gold_db_hash": gold_hash,
            "changed": final.get("changed"), "unsupported_basis": unknown or None,
            "nl_assertions": (task.get("evaluation_criteria") or {}).get("nl_assertions") or None}


def evaluate_trials(domain: str, db_path, tasks: list, responses: list, workers: int = 2) -> list:
    """Per task, the verdict of each of its trials (``responses[i]``: the task's transcripts)."""
    from evalkit.sandbox.tools import ToolSandbox
    with ToolSandbox(workers=workers, timeout=60.0, memory_mb=2048) as tools:
        with ThreadPoolExecutor(workers) as pool:
            golds = list(pool.map(lambda task: replay(tools, domain, db_path, gold_actions(task))[0], tasks))
    return [[verdict(task, t, gold) for t in transcripts] for task, transcripts, gold in zip(tasks, responses, golds)]
