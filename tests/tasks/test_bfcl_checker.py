"""evalkit's BFCL checker gives BFCL's own verdicts: both run here, item by item, on every
single-turn category of BFCL v4.

BFCL's evaluation code comes from the installed ``bfcl-eval`` package and runs in a subprocess
(tests/_bfcl_reference.py: its entry evaluation, decoder and ``ast_checker`` as they are, three
unrelated imports stubbed). Compared, for all 3,641 items:

* the prompts (BFCL's system prompt and messages) and the data (function docs, possible answers);
* (a) every possible answer written as a call, both as decoded calls (BFCL's ``ast_checker``) and
  as the text a model would write (BFCL's decoding, then its checker): the same verdicts, and every
  answer passes but those BFCL itself cannot accept (explained one by one: answers that contradict
  their function doc, Java values BFCL's converter or decoder cannot give);
* (b) the answers mutated (wrong function, missing required argument, wrong type, extra call,
  calls reversed, unknown argument, optional arguments given, second accepted value, int for float,
  restyled string, dotted names with and without BFCL's underscore handling), and fixed answers to
  the irrelevance and relevance items: the same verdicts;
* (c) the bundled model's real answers (SmolLM2-135M-Instruct on the session's vLLM engine, greedy,
  with BFCL's chat prompt and as plain text) to the two shortest items of each category, through
  ``bfcl_single_turn`` with ``--data`` on a folder in BFCL's layout: the same verdicts, and the
  task's summaries equal BFCL's aggregation of those verdicts.

Skipped when bfcl-eval is not installed (``pip install --no-deps bfcl-eval``); the Java and
JavaScript categories when tree-sitter is not (``pip install 'evalkit-harness[bfcl]'``).
"""
from __future__ import annotations

import collections
import importlib.util
import json
import subprocess
import sys
import time

import pytest

from conftest import REPO

from evalkit.tasks.bfcl import data as bfcl_data

if bfcl_data.installed_data_dir() is None:
    pytest.skip("bfcl-eval is not installed (pip install --no-deps bfcl-eval)", allow_module_level=True)

import _bfcl_cases as cases  # noqa: E402
from evalkit.taskapi import registry  # noqa: E402
from evalkit.taskapi.items import RunContext  # noqa: E402
from evalkit.tasks.bfcl.checker import check  # noqa: E402
from evalkit.tasks.bfcl.verdict import judge  # noqa: E402
from evalkit.tasks.bfcl import fc  # noqa: E402

HAS_TREE_SITTER = all(importlib.util.find_spec(m) for m in ("tree_sitter", "tree_sitter_java", "tree_sitter_javascript"))
CATEGORIES = [c if bfcl_data.language_of(c) == "python" or HAS_TREE_SITTER else
              pytest.param(c, marks=pytest.mark.skip(reason="tree-sitter is not installed: "
                                                    "pip install 'evalkit-harness[bfcl]'"))
              for c in bfcl_data.CATEGORIES]


def reference(request: dict) -> dict:
    """BFCL's answers to a request (tests/_bfcl_reference.py, one subprocess)."""
    r = subprocess.run([sys.executable, str(REPO / "tests" / "_bfcl_reference.py")], input=json.dumps(request),
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def outcome(result) -> object:
    """A verdict as compared: valid, invalid, or "crash" where BFCL's checker raises."""
    if isinstance(result, dict):
        return "crash" if "crash" in result else result["valid"]
    return "crash" if result.error_type.startswith("checker_error") else result.valid


@pytest.fixture(scope="module")
def docs():
    task = registry.get_task_class("bfcl_single_turn")()
    return {d.id: d for d in task.load_docs(task.eval_split)}  # eval_docs would want tree-sitter


@pytest.fixture(scope="module")
def parity(docs):
    """Both verdicts on (a) and (b) for every item, BFCL's prompts and data, BFCL's summaries."""
    checks, verdicts = [], []
    for d in docs.values():
        cat, lang = d.meta["category"], bfcl_data.language_of(d.meta["category"])
        if lang != "python" and not HAS_TREE_SITTER:
            continue
        item = {"functions": d.meta["functions"], "ground_truth": d.target}
        if bfcl_data.kind_of(cat) != "ast":
            verdicts += [{"id": d.id, "category": cat, "label": label, "text": text, "underscore_to_dot": False}
                         for label, text in cases.relevance_texts(item)]
            continue
        for label, calls, u2d in cases.variants(item):
            checks.append({"id": d.id, "category": cat, "label": label, "language": lang,
                           "calls": cases.decoded(calls, lang), "underscore_to_dot": u2d})
            verdicts.append({"id": d.id, "category": cat, "label": label, "text": cases.text(calls, lang),
                             "underscore_to_dot": u2d})
    correct = {"simple_python": 200, "simple_java": 25, "simple_javascript": 20, "multiple": 140, "parallel": 120,
               "parallel_multiple": 60, "irrelevance": 216, "live_simple": 142, "live_multiple": 474, "live_parallel": 4,
               "live_parallel_multiple": 3, "live_irrelevance": 707, "live_relevance": 12}
    totals = collections.Counter(d.meta["category"] for d in docs.values())
    table = {c: {"accuracy": k / totals[c], "correct": k, "total_count": totals[c]} for c, k in correct.items()}
    cats = [c for c in bfcl_data.CATEGORIES if bfcl_data.language_of(c) == "python" or HAS_TREE_SITTER]
    t0 = time.perf_counter()
    ref = reference({"checks": checks, "verdicts": verdicts, "prompts": cats, "scores": table})
    t_ref = time.perf_counter() - t0
    t0 = time.perf_counter()
    ours_checks = [check(it["category"], docs[it["id"]].meta["functions"], it["calls"], docs[it["id"]].target,
                         it["language"], it["underscore_to_dot"]) for it in checks]
    ours_verdicts = [judge(it["category"], docs[it["id"]].meta["functions"], docs[it["id"]].target, it["text"],
                           it["underscore_to_dot"]) for it in verdicts]
    print(f"\nBFCL parity: {len(checks)} decoded answers, {len(verdicts)} answer texts; BFCL's code "
          f"{t_ref:.1f}s (with its imports), evalkit's {time.perf_counter() - t0:.1f}s")
    return {"checks": list(zip(checks, ref["checks"], ours_checks)),
            "verdicts": list(zip(verdicts, ref["verdicts"], ours_verdicts)),
            "prompts": ref["prompts"], "scores": ref["scores"], "table": table}


def _mismatches(rows, category, labels=None):
    return [(it["id"], it["label"], it.get("text", it.get("calls")), theirs, (ours.error_type, ours.message))
            for it, theirs, ours in rows if it["category"] == category
            and (labels is None or it["label"] in labels) and outcome(theirs) != outcome(ours)]


@pytest.mark.parametrize("category", CATEGORIES)
def test_prompts_and_data_are_bfcls(parity, docs, category):
    ctx = RunContext(apply_chat_template=True)
    task = registry.get_task_class(f"bfcl_{category}")()
    rows = parity["prompts"][category]
    assert [r["id"] for r in rows] == [d.id for d in docs.values() if d.meta["category"] == category]
    for r in rows:
        d = docs[r["id"]]
        assert task.messages(d, ctx) == r["messages"], r["id"]
        assert d.meta["functions"] == r["function"] and d.target == r["ground_truth"], r["id"]
        assert fc.openai_tools(d.meta["functions"], category) == r["tools"], r["id"]  # tool_mode=native


@pytest.mark.parametrize("category", [c for c in CATEGORIES if bfcl_data.kind_of(getattr(c, "values", [c])[0]) == "ast"])
def test_possible_answers_pass_in_both_but_where_bfcl_cannot_accept_them(parity, docs, category):
    """(a) Same verdicts on every possible answer; each passes unless BFCL itself rejects it."""
    lang = bfcl_data.language_of(category)
    for kind in ("checks", "verdicts"):
        rows = [r for r in parity[kind] if r[0]["category"] == category and r[0]["label"] == "answer"]
        assert len(rows) == sum(d.meta["category"] == category for d in docs.values())
        assert _mismatches(rows, category) == []
        failing = {it["id"] for it, theirs, ours in rows if not ours.valid}
        unexplained = [i for i in failing if not cases.unpassable(
            {"functions": docs[i].meta["functions"], "ground_truth": docs[i].target}, lang, kind == "verdicts")]
        assert unexplained == [], kind
        print(f"{category} {kind}: {len(rows) - len(failing)}/{len(rows)} possible answers pass in both, "
              f"{len(failing)} rejected by BFCL itself and by evalkit")


@pytest.mark.parametrize("category", CATEGORIES)
def test_mutated_answers_get_bfcls_verdicts(parity, category):
    """(b) Same verdicts on every mutation (and on fixed irrelevance/relevance answers)."""
    counts = collections.Counter()
    for kind in ("checks", "verdicts"):
        rows = [r for r in parity[kind] if r[0]["category"] == category and r[0]["label"] != "answer"]
        assert _mismatches(rows, category) == []
        counts.update((it["label"], outcome(ours)) for it, _, ours in rows)
    assert counts
    if bfcl_data.kind_of(category) == "ast":  # the mutations that must fail do fail
        for label in ("wrong_function", "missing_required", "extra_call", "unknown_argument"):
            assert counts[(label, True)] == 0, label
    elif category != "live_relevance":
        assert counts[("prose", True)] and counts[("empty", True)] and not counts[("call", True)]
    print(f"{category}: {sum(counts.values())} mutated answers, same verdicts: {dict(sorted(counts.items()))}")


def test_summaries_are_bfcls_aggregation(parity):
    from evalkit.taskapi.items import Sample
    from evalkit.tasks.bfcl import scores
    samples = []
    for cat, row in parity["table"].items():
        samples += [Sample(f"{cat}_{i}", "h", "", [], None, {"accuracy": float(i < row["correct"])},
                           extra={"category": cat})
                    for i in range(row["total_count"])]
    ours = scores.summaries(samples)
    ref = parity["scores"]
    for name in scores.SUMMARIES:
        assert ours[name].value == pytest.approx(ref[name], abs=1e-12), name
        assert ours[name].ci_low < ours[name].value < ours[name].ci_high
    assert scores.overall_with_missing_as_zero(ours)["value"] == pytest.approx(ref["overall"], abs=1e-12)


def test_native_tool_calls_get_bfcls_verdicts(parity, docs):
    """tool_mode=native: the decoded answers and mutations, sent as a function-calling model's tool calls
    (names with underscores for dots), scored through the task as BFCL's checker scores them with
    underscore_to_dot."""
    from evalkit.taskapi.requests import Completion
    rows = [(it, theirs) for it, theirs, _ in parity["checks"] if it["underscore_to_dot"]
            and it["language"] == "python" and all(isinstance(c, dict) and len(c) == 1 for c in it["calls"])]
    tasks = {}
    mismatches = []
    for it, theirs in rows:
        task = tasks.setdefault(it["category"], registry.get_task_class(f"bfcl_{it['category']}")(tool_mode="native"))
        calls = [{"name": name, "arguments": args} for c in it["calls"] for name, args in c.items()]
        reply = Completion("", "stop", tool_calls=calls, content="")
        (sample,) = task.score_all([docs[it["id"]]], [[[reply]]], RunContext())
        if bool(sample.metrics["accuracy"]) != outcome(theirs):
            mismatches.append((it["id"], it["label"], theirs, sample.extra["error_type"]))
    assert len(rows) > 500 and mismatches == []


# ---- (c) the bundled model's own answers --------------------------------------------------------
def _shortest_items(tmp_path, per_category: int = 2):
    """A BFCL data folder holding the ``per_category`` items of each category with the shortest
    prompts (the model's prefill is what costs on CPU)."""
    src = bfcl_data.installed_data_dir()
    (tmp_path / "possible_answer").mkdir(parents=True)
    for cat in bfcl_data.CATEGORIES:
        q_file, a_file = bfcl_data.category_files(src, cat)
        rows = [json.loads(line) for line in q_file.read_text(encoding="utf-8").splitlines() if line.strip()]
        keep = {r["id"] for r in sorted(rows, key=lambda r: len(json.dumps(r)))[:per_category]}
        (tmp_path / q_file.name).write_text("".join(json.dumps(r) + "\n" for r in rows if r["id"] in keep))
        if a_file is not None:
            answers = [line for line in a_file.read_text(encoding="utf-8").splitlines()
                       if line.strip() and json.loads(line)["id"] in keep]
            (tmp_path / "possible_answer" / a_file.name).write_text("\n".join(answers) + "\n")
    return tmp_path


@pytest.mark.skipif(not HAS_TREE_SITTER, reason="tree-sitter is not installed: pip install 'evalkit-harness[bfcl]'")
def test_the_bundled_models_answers_get_bfcls_verdicts(tmp_path, vllm_backend, cache_dir):
    """(c) Real answers of SmolLM2-135M-Instruct (greedy, 48 new tokens) from the session's vLLM engine
    (on CPU its prefill is ~5x the transformers backend's: 13 prompts of ~450 tokens take ~10 s, not
    ~50 s; one item per category, the shortest), with BFCL's chat prompt and as plain text (where the model
    answers differently), and as function calling (tool_mode=native)."""
    import evalkit
    folder = _shortest_items(tmp_path / "bfcl", per_category=1)
    t0 = time.perf_counter()
    runs = {chat: evalkit.evaluate(model=vllm_backend, tasks=["bfcl_single_turn"], data={"bfcl_single_turn": str(folder)},
                                   apply_chat_template=chat, gen_kwargs={"max_tokens": 48}, output=None,
                                   cache_dir=str(cache_dir)) for chat in (True, False)}
    t_gen = time.perf_counter() - t0
    rows = {chat: run.samples["bfcl_single_turn"] for chat, run in runs.items()}
    assert collections.Counter(r["extra"]["category"] for r in rows[True]) == {c: 1 for c in bfcl_data.CATEGORIES}
    items = [{"id": r["doc_id"], "category": r["extra"]["category"], "text": r["responses"][0], "group": str(chat),
              "underscore_to_dot": False} for chat, rs in rows.items() for r in rs]
    ref = reference({"verdicts": items, "score_verdicts": True})
    ours = [r for rs in rows.values() for r in rs]
    assert [(it["id"], it["text"], theirs) for it, theirs, row in zip(items, ref["verdicts"], ours)
            if outcome(theirs) != bool(row["metrics"]["accuracy"])] == []
    for chat in (True, False):
        metrics = runs[chat].tasks["bfcl_single_turn"].metrics  # the task's summaries are BFCL's aggregation
        for name in scores_names():
            assert metrics[name].value == pytest.approx(ref["verdict_scores"][str(chat)][name]), (chat, name)
        assert set(runs[chat].tasks["bfcl_single_turn"].breakdowns) == {f"category:{c}" for c in bfcl_data.CATEGORIES}
    kinds = collections.Counter(r["extra"]["error_type"] or "valid" for rs in rows.values() for r in rs)
    print(f"\nmodel answers: {sum(map(len, rows.values()))} in {t_gen:.0f}s, every verdict equals BFCL's: {dict(kinds)}")
    # function calling (tool_mode=native): the docs as tools, the replies' tool calls decoded as BFCL's FC handlers
    # do ([{name: arguments}]); those that decode are checked by BFCL's ast_checker with underscore_to_dot
    native = evalkit.evaluate(model=vllm_backend, tasks=["bfcl_single_turn"], data={"bfcl_single_turn": str(folder)},
                              task_args={"bfcl_single_turn": {"tool_mode": "native"}}, gen_kwargs={"max_tokens": 48},
                              output=None, cache_dir=str(cache_dir)).samples["bfcl_single_turn"]
    checks = [{"id": r["doc_id"], "category": r["extra"]["category"], "language": bfcl_data.language_of(
        r["extra"]["category"]), "calls": r["extracted"], "underscore_to_dot": True} for r in native
        if bfcl_data.kind_of(r["extra"]["category"]) == "ast" and r["extra"]["error_type"] != "ast_decoder:decoder_failed"]
    theirs = reference({"checks": checks})["checks"] if checks else []
    by_id = {r["doc_id"]: r for r in native}
    assert [(c["id"], t) for c, t in zip(checks, theirs) if outcome(t) != bool(by_id[c["id"]]["metrics"]["accuracy"])] == []
    for r in native:
        calls = r["extra"]["tool_calls"]
        if bfcl_data.kind_of(r["extra"]["category"]) != "ast":  # no call is right for irrelevance, wrong for relevance
            assert bool(r["metrics"]["accuracy"]) == (not calls if "irrelevance" in r["extra"]["category"] else bool(calls))
        elif not calls:
            assert r["extra"]["error_type"] == "ast_decoder:decoder_failed"
    print(f"native tool calls: {sum(len(r['extra']['tool_calls'] or []) for r in native)} in {len(native)} replies, "
          f"{len(checks)} checked by BFCL's ast_checker")


def scores_names() -> tuple:
    from evalkit.tasks.bfcl.scores import SUMMARIES
    return SUMMARIES
