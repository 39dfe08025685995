"""τ²-bench's banking_knowledge domain on evalkit's agent loop.

* A sample of 21 tasks (every 8th and all 9 ACTION ones): a scripted agent makes the task's agent-side gold
  actions as its own tool calls and asks the customer for the rest; a scripted customer makes those with its
  own tools (run in the sandbox on the same database), then stops. The evaluator (DB or ACTION) gives reward
  1. (All 97 take ~150 s, too long for the suite; they were checked once, with evalkit's port compared to
  τ²-bench's own code on every gold action and thousands of probe calls, outside the repository.)
* Against inspect-evals' port of τ²-bench's banking tools (``inspect_evals.tau2.banking``), on a
  sample of tasks: after the initial state and after every gold action (either side), the same
  result text and the same database hash; ``grep`` returns the port's text for a set of patterns and
  ``KB_search`` rank_bm25's ``BM25Okapi`` ranking and scores.
* A dropped gold action gets the reference's database verdict.
"""
from __future__ import annotations

import json

import pytest
from evalkit.tasks.tau2 import data, evaluate

import evalkit
from tests.tasks.test_tau2 import tasks_by_tag
from tests.tasks.test_tau2_telecom import gold_agent, gold_customer

pytest.importorskip("inspect_evals", reason="τ²-bench's data ships in inspect-evals (pip install --no-deps)")
DOMAIN = "banking_knowledge"


def play_gold(monkeypatch, ids):
    from evalkit.tasks.tau2 import banking
    monkeypatch.setattr(banking.Tau2Banking, "eval_docs",
                        lambda self: [d for d in self.load_docs("base") if d.id in ids])
    by_tag = tasks_by_tag(DOMAIN)
    assert len(by_tag) == len(ids)
    return evalkit.evaluate(model=gold_agent(by_tag), user_model=gold_customer(by_tag),
                            tasks=["tau2_banking_knowledge"], output=None, cache=False)


def check_all_pass(run, n: int):
    rows = run.samples["tau2_banking_knowledge"]
    m = run.tasks["tau2_banking_knowledge"].metrics
    bad = [(r["doc_id"], r["extra"].get("stop_reason"), r["extra"].get("db_hash") == r["extra"].get("gold_db_hash"))
           for r in rows if r["metrics"]["reward"] != 1.0]
    assert not bad and len(rows) == n
    assert m["reward"].value == 1.0 and m["fail_db"].value == 0.0 and m["fail_action"].value == 0.0
    assert m["user_tool_calls"].value > 0
    return rows


def test_gold_actions_of_agent_and_customer_get_reward_1_on_a_sample(monkeypatch):
    """Every 8th task and every ACTION task."""
    tasks = data.load_domain(DOMAIN).tasks
    ids = {str(t["id"]) for t in tasks[::8]} | {str(t["id"]) for t in tasks if evaluate.basis(t) == ("ACTION",)}
    rows = check_all_pass(play_gold(monkeypatch, ids), len(ids))
    assert sum(r["extra"]["reward_basis"] == ["ACTION"] for r in rows) == 9


# ---- the reference: inspect-evals' port, in this process
def reference(task: dict):
    from inspect_ai.util._store import Store, init_subtask_store
    from inspect_evals.tau2.banking.BankingAgentTools import BankingAgentTools
    from inspect_evals.tau2.banking.BankingUserTools import BankingUserTools
    from inspect_evals.tau2.banking.environment import apply_initial_state
    from inspect_evals.tau2.data_model.tasks import Task
    init_subtask_store(Store())
    agent, user = BankingAgentTools(instance="ref_agent"), BankingUserTools(instance="ref_user")
    agent.initialize()
    user.db, user.initialized = agent.db, True
    apply_initial_state(agent, user, Task.model_validate(task).initial_state)
    return agent, user


def ref_call(ref, side, name: str, arguments: dict) -> str:
    agent, user = ref
    try:
        return getattr(user if side == "user" else agent, name)(**arguments)
    except Exception as e:  # noqa: BLE001 (the port's ToolError)
        return f"Error: {e}"


def ref_hash(ref) -> str:
    """The port's database hash, less ``interest_discrepancy_reports``: τ²-bench's model at fcc9ed68 has no
    such table, so ``submit_interest_discrepancy_report_7294``'s ``add_to_db`` writes nothing there."""
    import hashlib
    dump = ref[0].db.model_dump()
    dump.pop("interest_discrepancy_reports")
    return hashlib.sha256(json.dumps(dump, sort_keys=True, default=str).encode()).hexdigest()


#: their text quotes the discoverable tool's docstring, which inspect-evals' port abridges for some tools
DOCSTRING_TOOLS = ("unlock_discoverable_agent_tool", "give_discoverable_user_tool")


def _ends(text: str) -> tuple:
    lines = text.splitlines()
    return lines[0], lines[-1]


def sample(step: int = 8) -> list:
    return data.load_domain(DOMAIN).tasks[::step]


def test_each_gold_action_equals_the_reference_ports_result_and_hash():
    from evalkit.tasks.tau2.env import domain_env

    from evalkit.sandbox.tools import ToolSandbox
    dom = data.load_domain(DOMAIN)
    checked = 0
    with ToolSandbox(workers=1, timeout=60.0, memory_mb=2048) as tools:
        for task in sample():
            ref = reference(task)
            env = domain_env(DOMAIN, dom.db_path, task)
            state = tools.start(env).state
            assert tools.snapshot(env, state)["db_hash"] == ref_hash(ref), task["id"]
            for a in evaluate.gold_actions(task):
                side = a.get("requestor")
                out = tools.call(env, state, ("user:" if side == "user" else "") + a["name"], a["arguments"],
                                 snapshot=True)
                state = out.state
                got = out.result if out.error is None else f"Error: {out.error}"
                want = ref_call(ref, side, a["name"], json.loads(json.dumps(a["arguments"])))
                if a["name"] in DOCSTRING_TOOLS:  # the port shortens some discoverable tools' docstrings
                    got, want = _ends(got), _ends(want)
                assert got == want, (task["id"], a)
                assert out.snapshot["db_hash"] == ref_hash(ref), (task["id"], a["name"])
                checked += 1
    assert checked >= 80


PATTERNS = ["dispute|chargeback", "close.*credit card", "Rho-Bank\\+", "annual fee", "[unclosed", "", "zzzz-none",
            "activate_debit_card_829[0-9]", "referral"]
QUERIES = ["credit card dispute", "how do I open a savings account", "Gold Rewards Card annual fee",
           "transfer to human agent reason codes", "", "qqqq nothing"]


def test_the_knowledge_base_tools_return_what_the_reference_returns():
    from evalkit.tasks.tau2.env import domain_env
    from inspect_evals.tau2.banking.tools import _get_knowledge_base
    from rank_bm25 import BM25Okapi

    from evalkit.sandbox.tools import ToolSandbox
    dom = data.load_domain(DOMAIN)
    kb = _get_knowledge_base()
    ids = kb.get_document_ids()
    bm25 = BM25Okapi([c.lower().split() for c in kb.get_document_texts()])
    env = domain_env(DOMAIN, dom.db_path, dom.tasks[0])
    with ToolSandbox(workers=1, timeout=60.0, memory_mb=2048) as tools:
        state = tools.start(env).state
        for p in PATTERNS:
            assert tools.call(env, state, "grep", {"pattern": p}).result == kb.grep(p), p
        for q in QUERIES:
            got = tools.call(env, state, "KB_search", {"query": q}).result
            if not q.strip():
                assert got.startswith("No relevant documents found.")
                continue
            scores = bm25.get_scores(q.lower().split())
            top = sorted(range(len(scores)), key=lambda i: scores[i], reverse=True)[:10]
            want = [(ids[i], f"{float(scores[i]):.4f}") for i in top]
            listed = [(line.split("ID: ")[1], nxt.split("Score: ")[1]) for line, nxt in
                      zip(got.splitlines(), got.splitlines()[1:]) if line.startswith("   ID: ")]
            assert listed == want, q
        other = domain_env(DOMAIN, dom.db_path, dom.tasks[0], retrieval="no_knowledge")
        assert tools.call(other, tools.start(other).state, "grep", {"pattern": "x"}).error == "Tool 'grep' not found."


def test_a_dropped_gold_action_gets_the_reference_db_verdict():
    from evalkit.tasks.tau2.env import domain_env

    from evalkit.sandbox.tools import ToolSandbox
    dom = data.load_domain(DOMAIN)
    tasks = [t for t in sample(4) if evaluate.basis(t) == ("DB",) and len(evaluate.gold_actions(t)) >= 2][:10]
    verdicts = []
    with ToolSandbox(workers=2, timeout=60.0, memory_mb=2048) as tools:
        for task in tasks:
            gold = evaluate.gold_actions(task)
            seqs = [gold] + [gold[:i] + gold[i + 1:] for i in (0, len(gold) - 1)]
            hashes, ref_hashes = [], []
            for seq in seqs:
                snap, _ = evaluate.replay_snapshot(tools, domain_env(DOMAIN, dom.db_path, task), seq)
                hashes.append(snap["db_hash"])
                ref = reference(task)
                for a in seq:
                    ref_call(ref, a.get("requestor"), a["name"], a["arguments"])
                ref_hashes.append(ref_hash(ref))
            verdicts += [(h == hashes[0], r == ref_hashes[0]) for h, r in zip(hashes[1:], ref_hashes[1:])]
    assert len(verdicts) == 2 * len(tasks) >= 16
    assert all(ours == theirs for ours, theirs in verdicts)
    assert sum(not ours for ours, _ in verdicts) >= len(tasks)  # most drops break the database
