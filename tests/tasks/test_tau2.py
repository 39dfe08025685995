"""τ²-bench on evalkit's agent loop.

* Every airline (50) and retail (114) task: a scripted agent makes the task's gold actions as its own
  tool calls, one per turn, through the agent loop and the sandbox, then says what it had to
  communicate; a scripted customer stops. τ²-bench's evaluator (evalkit's) gives reward 1 on all.
* Item by item against a reference port of τ²-bench's tools and database (``inspect_evals.tau2``,
  pydantic models as τ²-bench's): after every gold action of a sample of tasks, the same result
  and the same database hash; perturbed action sequences get the same database verdict.
"""
from __future__ import annotations

import hashlib
import json

import pytest

import evalkit
from evalkit.taskapi.requests import Completion
from conftest import evalkit_cli
from _fakes import ScriptedBackend
from evalkit.tasks.tau2 import data, evaluate
from evalkit.taskapi.registry import get_task_class

pytest.importorskip("inspect_evals", reason="τ²-bench's data ships in inspect-evals (pip install --no-deps)")


def tag(system_prompt: str) -> str:
    return "task " + hashlib.sha1(system_prompt.encode()).hexdigest()[:12]


def chat(model: str, reply) -> ScriptedBackend:
    """A scripted chat model: ``reply(messages)`` gives (text, tool calls) for each model turn."""
    def turn(r):
        text, calls = reply(r.message_dicts())
        return Completion(text, "stop", tool_calls=calls, content=text)
    return ScriptedBackend(turn, name="scripted-chat", identity={"model": model})


def gold_agent(tasks_by_tag: dict) -> ScriptedBackend:
    """Plays each task's gold actions as tool calls, then tells the customer what it must communicate."""
    def reply(msgs):
        task = tasks_by_tag[next(m["content"] for m in msgs if m["role"] == "user")]
        done = sum(1 for m in msgs if m["role"] == "assistant" and m.get("tool_calls"))
        actions = evaluate.gold_actions(task)
        if done < len(actions):
            return "", [{"name": actions[done]["name"], "arguments": actions[done]["arguments"]}]
        return "Done. " + " ".join(task["evaluation_criteria"].get("communicate_info") or []), []
    return chat("GoldAgent", reply)


def customer() -> ScriptedBackend:
    """Names its task (a hash of its scenario), then stops once the agent answered."""
    def reply(msgs):
        said = sum(m["role"] == "assistant" for m in msgs)
        return (tag(msgs[0]["content"]) if said == 0 else "Thanks. ###STOP###"), []
    return chat("Customer", reply)


def tasks_by_tag(domain: str) -> dict:
    from evalkit.taskapi.items import RunContext
    t = get_task_class(f"tau2_{domain}")()
    return {tag(t.episode(d, RunContext()).user_sim.system_prompt): d.meta["task"] for d in t.eval_docs()}


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_gold_actions_played_by_the_agent_get_reward_1_on_every_task(domain):
    by_tag = tasks_by_tag(domain)
    n = len(data.load_domain(domain).tasks)
    assert len(by_tag) == n == {"airline": 50, "retail": 114}[domain]
    run = evalkit.evaluate(model=gold_agent(by_tag), user_model=customer(), tasks=[f"tau2_{domain}"], output=None,
                           cache=False)
    rows = run.samples[f"tau2_{domain}"]
    assert len(rows) == n
    bad = [(r["doc_id"], r["extra"].get("stop_reason"), r["metrics"]["db_match"], r["metrics"]["communicate"])
           for r in rows if r["metrics"]["reward"] != 1.0]
    assert not bad
    m = run.tasks[f"tau2_{domain}"].metrics
    assert m["reward"].value == 1.0 and m["fail_db"].value == 0.0 and m["reward"].n == n
    first = rows[0]["responses"][0]
    assert first["messages"][1] == {"role": "assistant", "content": "Hi! How can I help you today?"}
    assert first["stop_reason"] == "user_stop" and run.user_model["identity"] == {"model": "Customer"}


def reference(domain: str):
    pytest.importorskip("toml")
    if domain == "airline":
        from inspect_evals.tau2.airline.AirlineAgentTools import AirlineAgentTools as Tools
    else:
        from inspect_evals.tau2.retail.RetailAgentTools import RetailAgentTools as Tools
    from inspect_ai.util._store import Store, init_subtask_store
    init_subtask_store(Store())  # a fresh database: the port keeps it in Inspect's per-sample store
    t = Tools()
    t.initialize()
    return t


def ref_call(tools, name: str, arguments: dict):
    """(result as JSON data, error) of the reference port's tool."""
    from pydantic import BaseModel
    if name in ("calculate", "transfer_to_human_agents"):
        return (str(round(float(eval(arguments["expression"], {"__builtins__": None}, {})), 2))
                if name == "calculate" else "Transfer successful"), None
    try:
        res = getattr(tools, name)(**arguments)
    except Exception as e:  # noqa: BLE001 (the reference's ToolError / ValueError)
        return None, str(e)

    def dump(x):
        if isinstance(x, str) and x[:1] in "[{":  # the port returns its models' JSON
            return json.loads(x)
        if isinstance(x, BaseModel):
            return x.model_dump()
        if isinstance(x, (list, tuple)):
            return [dump(i) for i in x]
        return x
    return dump(res), None


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_each_tool_call_equals_the_reference_port_result_and_database(domain):
    from evalkit.sandbox.tools import ToolSandbox
    from evalkit.tasks.tau2.env import domain_env
    dom = data.load_domain(domain)
    sample = dom.tasks[::5 if domain == "airline" else 10]
    checked = 0
    with ToolSandbox(workers=1, timeout=60.0, memory_mb=2048) as tools:
        for task in sample:
            ref = reference(domain)
            env = domain_env(domain, dom.db_path)
            state = tools.start(env).state
            for a in evaluate.gold_actions(task):
                out = tools.call(env, state, a["name"], a["arguments"], snapshot=True)
                state = out.state
                want, err = ref_call(ref, a["name"], json.loads(json.dumps(a["arguments"])))
                if err is not None:
                    assert out.error == err, (task["id"], a)
                else:
                    got = json.loads(out.result) if out.result[:1] in "[{" else out.result
                    assert got == json.loads(json.dumps(want)), (task["id"], a["name"])
                assert out.snapshot["db_hash"] == ref.db.get_hash(), (task["id"], a["name"])
                checked += 1
    assert checked > {"airline": 10, "retail": 40}[domain]


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_perturbed_action_sequences_get_the_references_database_verdict(domain):
    from evalkit.sandbox.tools import ToolSandbox
    dom = data.load_domain(domain)
    writes = [t for t in dom.tasks if any(a["name"].startswith(("book", "cancel", "update", "send", "modify",
                                                                     "return", "exchange"))
                                          for a in evaluate.gold_actions(t))][:4]
    verdicts = []
    with ToolSandbox(workers=2, timeout=60.0, memory_mb=2048) as tools:
        for task in writes:
            gold = evaluate.gold_actions(task)
            last_write = max(i for i, a in enumerate(gold) if a["name"] not in ("get_user_details",
                             "get_reservation_details", "search_direct_flight", "get_order_details",
                             "get_product_details", "find_user_id_by_name_zip", "find_user_id_by_email", "calculate"))
            dropped = gold[:last_write] + gold[last_write + 1:]
            changed = json.loads(json.dumps(gold))
            args = changed[last_write]["arguments"]
            key = next(k for k in args if isinstance(args[k], (str, int)) and not str(k).endswith("_id")) \
                if any(isinstance(v, (str, int)) and not str(k).endswith("_id") for k, v in args.items()) else None
            if key:
                args[key] = args[key] + 1 if isinstance(args[key], int) else args[key] + "x"
            gold_hash, _ = evaluate.replay(tools, domain, dom.db_path, gold)
            for seq in (gold, dropped, changed):
                ours = evaluate.replay(tools, domain, dom.db_path, seq)[0] == gold_hash
                hashes = []
                for actions in (gold, seq):
                    ref = reference(domain)
                    for a in actions:
                        ref_call(ref, a["name"], json.loads(json.dumps(a["arguments"])))
                    hashes.append(ref.db.get_hash())
                verdicts.append((ours, hashes[0] == hashes[1]))
    assert all(o == r for o, r in verdicts) and len(verdicts) == 12
    assert sum(not o for o, _ in verdicts) >= 4  # the drops (at least) are caught


def test_a_bad_data_folder_is_one_line(tmp_path):
    from evalkit.taskapi.data import DataError
    (tmp_path / "domains" / "airline").mkdir(parents=True)
    (tmp_path / "domains" / "airline" / "tasks.json").write_text('[{"id": "0"}]')
    with pytest.raises(DataError, match="user_simulator/simulation_guidelines.txt not found"):
        data.load_domain("airline", str(tmp_path))
    (tmp_path / "user_simulator").mkdir()
    (tmp_path / "user_simulator" / "simulation_guidelines.txt").write_text("Be a customer.")
    with pytest.raises(DataError, match=r"tasks.json: task \[0\]: field 'user_scenario' is missing"):
        data.load_domain("airline", str(tmp_path))
    (tmp_path / "domains" / "airline" / "tasks.json").write_text('[{"id": ')
    with pytest.raises(DataError, match=r"tasks.json:1: invalid JSON"):
        data.load_domain("airline", str(tmp_path))


def test_write_out_shows_the_policy_and_the_agents_opening_line(capsys):
    from evalkit.cli import main
    assert main(["run", "--model", "hf:x", "--tasks", "tau2_retail", "--limit", "1", "--write-out"]) == 0
    out = capsys.readouterr().out
    assert "<policy>" in out and "Hi! How can I help you today?" in out and "1 docs planned" in out


def _copy_airline(dest):
    """The released airline domain copied into ``dest`` (a folder outside Python's install folders)."""
    import shutil
    root = data.default_data_dir()
    shutil.copytree(root / "domains" / "airline", dest / "domains" / "airline")
    shutil.copytree(root / "user_simulator", dest / "user_simulator")
    return dest


def test_data_anywhere_runs_and_a_broken_environment_stops_before_the_model(tmp_path):
    """#47: --data in a folder the sandbox can't see (under /tmp, with a space) works; a database the
    environment can't read stops the run at once, one line, exit 2, before any model is loaded."""
    from evalkit.run.checks import check_tool_environment
    from evalkit.taskapi import registry as reg
    good = _copy_airline(tmp_path / "tau2 data")
    task = reg.get_task_class("tau2_airline")(data_path=str(good))
    check_tool_environment(task, task.eval_docs()[:1])  # set up + a state round trip in the sandbox
    bad = _copy_airline(tmp_path / "broken")
    (bad / "domains" / "airline" / "db.json.gz").write_bytes(b"\x1f\x8b not a gzip stream")
    r = evalkit_cli("run", "--model", "hf:/nonexistent/model-dir", "--tasks", "tau2_airline",
                    "--data", f"tau2_airline={bad}", "--limit", "1", "--no-output", "--no-cache")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert "tau2:airline" in line and "cannot run in the sandbox" in line, line
    assert "nonexistent" not in r.stderr  # it stopped before the model (whose folder does not exist)
