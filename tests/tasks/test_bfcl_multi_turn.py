"""BFCL v4's multi-turn categories: the entries and tools are BFCL's, the multi-turn checker (run in
evalkit's sandbox) gives BFCL's own verdicts, and whole entries play on the agent loop.

BFCL's code runs in a subprocess (tests/_bfcl_reference.py: its loaders, its FC handler's decoding and
``_evaluate_single_multi_turn_entry`` as they are). Compared:

* every entry of the four categories: function docs (with BFCL's hints), held-out docs, the native
  ``tools`` per turn, and the prompt-based first messages;
* BFCL's verdict and error type on the possible answers played as the model's calls (all pass) and
  on answers mutated (a call dropped, a wrong value, a turn without calls, calls in separate steps, a
  call repeated, an unknown function, a text step, calls a turn early, the entry cut short);
* an oracle model that makes the possible answer's calls, played through the agent loop and the
  sandboxed APIs: every entry passes, and the transcripts carry BFCL's execution results;
* the bundled model's real transcripts (session vLLM engine, native tools with the hermes parser):
  BFCL's verdicts on them.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys

import pytest

from conftest import REPO
from _fakes import ScriptedBackend

from evalkit.tasks.bfcl import data as bfcl_data

if bfcl_data.installed_data_dir() is None:
    pytest.skip("bfcl-eval is not installed (pip install --no-deps bfcl-eval)", allow_module_level=True)

from evalkit.taskapi import registry  # noqa: E402
from evalkit.taskapi.agent import Transcript  # noqa: E402
from evalkit.taskapi.items import RunContext  # noqa: E402
from evalkit.taskapi.requests import Completion  # noqa: E402
from evalkit.tasks.bfcl import multi_turn_env  # noqa: E402
from evalkit.tasks.bfcl.multi_turn_data import MULTI_TURN  # noqa: E402

PER_CATEGORY = 3  # entries per category in the mutation parity


def reference(request: dict) -> dict:
    r = subprocess.run([sys.executable, str(REPO / "tests" / "_bfcl_reference.py")], input=json.dumps(request),
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def task_of(category: str, **options):
    return registry.get_task_class(f"bfcl_{category}")(**options)


@pytest.fixture(scope="module")
def docs():
    return {c: task_of(c).eval_docs() for c in MULTI_TURN}


def as_call(text: str, functions: list) -> dict:
    """A possible answer's call string as a model's call (positional arguments named by the doc)."""
    node = ast.parse(text, mode="eval").body
    doc = next(f for f in functions if f["name"] == node.func.id)
    order = list(doc["parameters"]["properties"])
    args = {order[i]: ast.literal_eval(a) for i, a in enumerate(node.args)}
    args.update({k.arg: ast.literal_eval(k.value) for k in node.keywords})
    return {"name": node.func.id, "arguments": args}


def answer_plan(doc) -> list:
    """Per turn, per step, the calls (the possible answer: one step per turn with calls)."""
    functions = doc.meta["function"] + [f for fs in doc.meta["missed_function"].values() for f in fs]
    return [[[as_call(c, functions) for c in turn]] if turn else [] for turn in doc.target]


def _first_string_arg(plan):
    for t, turn in enumerate(plan):
        for s, step in enumerate(turn):
            for c, call in enumerate(step):
                for k, v in call["arguments"].items():
                    if isinstance(v, str):
                        return t, s, c, k
    return None


def mutations(plan: list) -> dict:
    """Labelled variants of an answer plan (a step is a list of calls, or a text)."""
    out = {"answer": plan}
    nonempty = [t for t, turn in enumerate(plan) if turn]
    if nonempty:
        t = nonempty[-1]
        dropped = json.loads(json.dumps(plan))
        dropped[t][0] = dropped[t][0][:-1]
        out["drop_last_call"] = dropped
        empty = json.loads(json.dumps(plan))
        empty[nonempty[0]] = []
        out["turn_without_calls"] = empty
        split = [[[c] for step in turn for c in step] for turn in plan]
        out["one_call_per_step"] = split
        repeated = json.loads(json.dumps(plan))
        repeated[nonempty[0]][0].append(repeated[nonempty[0]][0][0])
        out["call_repeated"] = repeated
        unknown = json.loads(json.dumps(plan))
        unknown[nonempty[0]].insert(0, [{"name": "not_a_function", "arguments": {"x": 1}}])
        out["unknown_function"] = unknown
        text = json.loads(json.dumps(plan))
        text[nonempty[0]].append("All done.")
        out["text_step"] = text
        if len(nonempty) > 1:
            early = json.loads(json.dumps(plan))
            a, b = nonempty[0], nonempty[1]
            early[a] = early[a] + early[b]
            early[b] = []
            out["calls_a_turn_early"] = early
    where = _first_string_arg(plan)
    if where:
        t, s, c, k = where
        wrong = json.loads(json.dumps(plan))
        wrong[t][s][c]["arguments"][k] += "_x"
        out["wrong_value"] = wrong
    out["cut_short"] = plan[:-1]
    return out


def transcript_of(plan: list, turns: int) -> Transcript:
    rows = [{"user_turn": t, "tool_calls": step if isinstance(step, list) else [], "parse_error": None,
             "text": step if isinstance(step, str) else ""} for t, turn in enumerate(plan) for step in turn]
    return Transcript(turns=rows, responses=[""] * len(plan), stop_reason="done" if len(plan) == turns else "max_steps")


def bfcl_result(plan: list) -> list:
    """The same plan as BFCL's FC handler records it: per step ``[{name: arguments JSON}]`` or the text."""
    return [[step if isinstance(step, str) else [{c["name"]: json.dumps(c["arguments"])} for c in step]
             for step in turn] for turn in plan]


def test_entries_and_tools_are_bfcls(docs):
    ref = reference({"multi_turn_prompts": list(MULTI_TURN)})["multi_turn_prompts"]
    for category in MULTI_TURN:
        native, prompted = task_of(category), task_of(category, tool_mode="prompt")
        theirs = {r["id"]: r for r in ref[category]}
        assert [d.id for d in docs[category]] == [r["id"] for r in ref[category]]
        for d in docs[category]:
            r = theirs[d.id]
            assert d.meta["function"] == r["function"] and d.meta["missed_function"] == r["missed_function"], d.id
            ep = native.episode(d, RunContext())
            assert ep.tools_at(0) == r["tools"], d.id
            for turn in d.meta["missed_function"]:  # BFCL recompiles its tools with the held-out docs appended
                assert [t["function"]["name"] for t in ep.tools_at(int(turn))] == \
                    [t["function"]["name"] for t in r["tools"]] + [f["name"] for f in d.meta["missed_function"][turn]]
            pe = prompted.episode(d, RunContext())
            assert pe.opening() + pe.turn_messages(0) == r["first_messages"], d.id


def test_the_checker_gives_bfcls_verdicts(docs):
    items, ours = [], []
    with multi_turn_env.checker() as check:
        for category in MULTI_TURN:
            for d in docs[category][:PER_CATEGORY]:
                for label, plan in mutations(answer_plan(d)).items():
                    v = check(d.meta, d.target, transcript_of(plan, len(d.target)))
                    items.append({"category": category, "id": d.id, "result": bfcl_result(plan), "label": label})
                    ours.append(v)
    theirs = reference({"multi_turn": [{k: it[k] for k in ("category", "id", "result")} for it in items]})["multi_turn"]
    diffs = [(it["id"], it["label"], t, (o["valid"], o.get("error_type"))) for it, o, t in zip(items, ours, theirs)
             if (o["valid"], o.get("error_type") or "") != (t["valid"], t["error_type"])]
    assert diffs == []
    by_label = {}
    for it, o in zip(items, ours):
        by_label.setdefault(it["label"], []).append(o["valid"])
    assert all(by_label["answer"]) and all(by_label["one_call_per_step"]) and all(by_label["text_step"])
    assert not any(by_label["cut_short"]) and not any(by_label["turn_without_calls"])
    kinds = sorted({o.get("error_type") or "valid" for o in ours})
    assert {"valid", "multi_turn:empty_turn_model_response", "multi_turn:instance_state_mismatch",
            "multi_turn:execution_response_mismatch", "multi_turn:force_terminated"} <= set(kinds), kinds
    print(f"\n{len(items)} answers, BFCL's verdicts on all: {kinds}")


def _oracle_entries(docs) -> list:
    """Per entry: its category, its user turns' contents, how many each turn has, the function names
    offered at each turn and the possible answer's calls."""
    from evalkit.tasks.bfcl.multi_turn import ADDED_FUNCTIONS_FC
    entries = []
    for ds in docs.values():
        for d in ds:
            users = [[m["content"] for m in turn if m["role"] == "user"] or [ADDED_FUNCTIONS_FC]
                     for turn in d.meta["question"]]
            names = [f["name"] for f in d.meta["function"]]
            offered = []
            for i in range(len(users)):
                names = names + [f["name"] for f in d.meta["missed_function"].get(str(i), [])]
                offered.append(sorted(names))
            entries.append((d.meta["category"], [u for us in users for u in us], [len(us) for us in users],
                            offered, answer_plan(d)))
    return entries


def _turn_calls(entries: list, users: list, category, tools: list):
    found = set()
    for cat, contents, sizes, offered, plan in entries:
        if contents[:len(users)] == users and category in (None, cat):
            turn = next(i for i in range(len(sizes)) if sum(sizes[:i + 1]) >= len(users))
            if offered[turn] != tools:
                continue
            found.add(json.dumps(plan[turn][0] if plan[turn] else None))
    assert len(found) == 1, users
    return json.loads(found.pop())


def oracle(docs, fail_after=None) -> ScriptedBackend:
    """Makes the possible answer's calls of the current turn in one reply, then says it is done. The
    entry is the one whose user turns so far are the conversation's, of the category a system message
    names (without one, entries of different categories sharing the user turns must share the answer
    for that turn, or the oracle fails: base and miss_param share questions, not answers)."""
    entries = _oracle_entries(docs)

    def reply(r):
        msgs = r.message_dicts()
        category = msgs[0]["content"] if msgs[0]["role"] == "system" else None
        calls = _turn_calls(entries, [m["content"] for m in msgs if m["role"] == "user"], category,
                            sorted(t["function"]["name"] for t in r.tool_dicts()))
        calls = calls if msgs[-1]["role"] == "user" else None
        return Completion("" if calls else "Done.", "stop", usage={"completion_tokens": 5},
                          tool_calls=calls or [], content="" if calls else "Done.")
    return ScriptedBackend(reply, name="oracle", identity={"model": "bfcl-oracle"}, fail_after=fail_after)


def test_an_oracle_passes_every_entry_through_the_agent_loop(docs):
    """The first entry of each category in ``bfcl_multi_turn`` (with BFCL's summary), then the next
    two of each category on its own task (the oracle told the category by ``--system-prompt``)."""
    import evalkit
    backend = oracle(docs)
    run = evalkit.evaluate(model=backend, tasks=["bfcl_multi_turn"], limit=1, output=None, cache=False)
    rows = run.samples["bfcl_multi_turn"]
    for category in MULTI_TURN:
        more = evalkit.evaluate(model=backend, tasks=[f"bfcl_{category}"], limit=3, system_prompt=category,
                                output=None, cache=False)
        rows += more.samples[f"bfcl_{category}"][1:]
    assert len(rows) == 12 and all(r["metrics"]["accuracy"] == 1.0 for r in rows), \
        [(r["doc_id"], r["extra"]) for r in rows if r["metrics"]["accuracy"] != 1.0]
    metrics = run.tasks["bfcl_multi_turn"].metrics
    assert metrics["multi_turn"].value == 1.0 and metrics["accuracy"].value == 1.0
    assert set(run.tasks["bfcl_multi_turn"].breakdowns) == {f"category:{c}" for c in MULTI_TURN}
    first = rows[0]
    t = first["responses"][0]
    results = [m["content"] for m in t["messages"] if m["role"] == "tool"]
    assert results and not any(r.startswith("Error") for r in results)
    assert len(t["responses"]) == len(docs[first["extra"]["category"]][0].target)
    assert t["snapshots"] and all(isinstance(s, dict) and s for s in t["snapshots"])  # the APIs' public state per turn
    assert first["extracted"][0][0][0].split("(")[0] == docs["multi_turn_base"][0].target[0][0].split("(")[0]
    assert first["metrics"]["tool_errors"] == 0 and first["metrics"]["unknown_function"] == 0


def test_a_killed_run_resumes_at_the_turn_it_reached(docs, tmp_path):
    """Killed in the third round of model turns (both entries' first two turns were answered, one
    engine batch per round), rerun: those four come from the cache, the transcripts and verdicts are
    an uninterrupted run's."""
    import evalkit
    kw = dict(tasks=["bfcl_multi_turn_base", "bfcl_multi_turn_miss_func"], limit=1, output=None)
    whole = evalkit.evaluate(model=oracle(docs), cache=False, **kw)
    with pytest.raises(KeyboardInterrupt):
        evalkit.evaluate(model=oracle(docs, fail_after=4), cache_dir=str(tmp_path), **kw)
    again = oracle(docs)
    resumed = evalkit.evaluate(model=again, cache_dir=str(tmp_path), **kw)
    total = sum(len(r["responses"][0]["turns"]) for rs in whole.samples.values() for r in rs)
    assert len(again.requests) == total - 4
    for task, rows in whole.samples.items():
        assert [(r["responses"][0]["messages"], r["metrics"]["accuracy"]) for r in rows] == \
            [(r["responses"][0]["messages"], r["metrics"]["accuracy"]) for r in resumed.samples[task]]


def transcript_result(t: dict) -> list:
    """A played transcript as BFCL's FC handler records it: per turn, per reply, its calls as
    ``[{name: arguments JSON}]`` (a call with unreadable arguments as they came), or its text."""
    plan = [[] for _ in t["responses"]]
    for turn in t["turns"]:
        calls = turn["tool_calls"]
        if calls and not turn["parse_error"]:
            step = [{c["name"]: c.get("raw_arguments", json.dumps(c.get("arguments")))} for c in calls]
        else:
            step = turn["text"]
        plan[turn["user_turn"]].append(step)
    return plan


def play_and_compare(backend, keep: dict, cache_dir, tmp_path) -> list:
    """The entries ``keep`` names, cut to their first turns, played by ``backend`` (native tools, the
    hermes parser, at most 3 replies per user turn); the transcripts are checked for BFCL's shape
    and the verdicts against BFCL's. Returns the rows."""
    import evalkit
    from _bfcl_folders import multi_turn_folder
    from evalkit.tasks.bfcl.multi_turn import ADDED_FUNCTIONS_FC
    folder = multi_turn_folder(tmp_path / "bfcl", keep)
    rows = []
    for category in keep:
        run = evalkit.evaluate(model=backend, tasks=[f"bfcl_{category}"], data={f"bfcl_{category}": str(folder)},
                               apply_chat_template=True, tool_parser="hermes",
                               task_args={f"bfcl_{category}": {"max_steps": 3}}, gen_kwargs={"max_tokens": 48},
                               output=None, cache_dir=str(cache_dir))
        rows += [(category, r) for r in run.samples[f"bfcl_{category}"]]
    items = []
    for category, r in rows:
        t, turns = r["responses"][0], keep[category][r["doc_id"]]
        assert len(t["responses"]) == turns and t["stop_reason"] == "done" and t["messages"][0]["role"] == "user"
        assert [m["content"] for m in t["messages"] if m["role"] == "user"][turns - 1:] == (
            [ADDED_FUNCTIONS_FC] if category == "multi_turn_miss_func" else [t["messages"][0]["content"]])
        assert all(turn["completion_tokens"] > 0 for turn in t["turns"]) and len(t["snapshots"]) == turns
        items.append({"category": category, "id": r["doc_id"], "result": transcript_result(t), "turns": turns})
    theirs = reference({"multi_turn": items})["multi_turn"]
    assert [(r["doc_id"], r["extra"]["error_type"], t) for (_, r), t in zip(rows, theirs)
            if (bool(r["metrics"]["accuracy"]), r["extra"]["error_type"] or "") != (t["valid"], t["error_type"])] == []
    print("\nbundled model:", [(r["doc_id"], len(r["responses"][0]["turns"]), r["extra"]["error_type"] or "valid")
                              for _, r in rows])
    return rows


def test_the_bundled_models_transcripts_get_bfcls_verdicts(vllm_backend, cache_dir, tmp_path):
    """SmolLM2-135M-Instruct on the session's vLLM engine on two entries cut short (every user turn
    is a ~3k-token prefill on CPU): multi_turn_base_0's first turn and multi_turn_miss_func_3's first
    two (the second brings back held-out functions). The tiny model answers in prose, not calls: its
    transcripts must still be BFCL's (turns, messages, tools offered) and so must its verdicts."""
    play_and_compare(vllm_backend, {"multi_turn_base": {"multi_turn_base_0": 1},
                                    "multi_turn_miss_func": {"multi_turn_miss_func_3": 2}}, cache_dir, tmp_path)


def test_the_bundled_model_plays_through_transformers(hf_backend, cache_dir, tmp_path):
    """The same through the transformers backend (the chat template given the tools), on
    multi_turn_base_1's first turn (one API: the shortest prompt)."""
    play_and_compare(hf_backend, {"multi_turn_base": {"multi_turn_base_1": 1}}, cache_dir, tmp_path)
