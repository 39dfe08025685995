"""The BFCL v4 single-turn tasks: registration, data (folder, file, errors named by file, line and
field), prompts, decoding (BFCL's rules, without running the model's code), checking rules, the
leaderboard summaries, and one run end to end on the bundled model. Parity with BFCL's own checker
is tests/tasks/test_bfcl_checker.py."""
from __future__ import annotations

import importlib.util
import json

import pytest

from evalkit.taskapi import registry
from evalkit.taskapi.data import DataError
from evalkit.taskapi.items import RunContext
from evalkit.tasks.bfcl import data as bfcl_data
from evalkit.tasks.bfcl import prompt, scores
from evalkit.tasks.bfcl.checker import check
from evalkit.tasks.bfcl.decode import DecodeError, decode_python
from evalkit.tasks.bfcl.verdict import judge

HAS_BFCL = bfcl_data.installed_data_dir() is not None
HAS_TREE_SITTER = all(importlib.util.find_spec(m) for m in ("tree_sitter", "tree_sitter_java", "tree_sitter_javascript"))
needs_bfcl = pytest.mark.skipif(not HAS_BFCL, reason="bfcl-eval is not installed (pip install --no-deps bfcl-eval)")
needs_tree_sitter = pytest.mark.skipif(not HAS_TREE_SITTER, reason="pip install 'evalkit-harness[bfcl]'")

AREA = {"name": "geometry.area", "description": "Area of a triangle.",
        "parameters": {"type": "dict", "required": ["base", "height"], "properties": {
            "base": {"type": "integer", "description": "Base."}, "height": {"type": "float", "description": "Height."},
            "unit": {"type": "string", "description": "Unit."}}}}
AREA_ANSWER = [{"geometry.area": {"base": [10], "height": [5.0], "unit": ["units", ""]}}]


def bfcl_folder(tmp_path, questions, answers=None, category="simple_python"):
    """A data folder in BFCL's layout (JSON Lines in .json files)."""
    (tmp_path / "possible_answer").mkdir(parents=True, exist_ok=True)
    (tmp_path / f"BFCL_v4_{category}.json").write_text("".join(
        (q if isinstance(q, str) else json.dumps(q)) + "\n" for q in questions))
    if answers is not None:
        (tmp_path / "possible_answer" / f"BFCL_v4_{category}.json").write_text("".join(
            (a if isinstance(a, str) else json.dumps(a)) + "\n" for a in answers))
    return tmp_path


def question(i, text="Area of a triangle with base 10 and height 5?"):
    return {"id": f"simple_python_{i}", "question": [[{"role": "user", "content": text}]], "function": [AREA]}


# ---- tasks and data -----------------------------------------------------------------------------
def test_every_single_turn_category_is_a_task_plus_one_for_all():
    from evalkit.tasks.bfcl.multi_turn_data import MULTI_TURN
    names = {n for n in registry.all_tasks() if n.startswith("bfcl_")}
    assert names == {f"bfcl_{c}" for c in bfcl_data.CATEGORIES + MULTI_TURN} | {"bfcl_single_turn", "bfcl_multi_turn"}
    declared = {m["name"]: m["higher_is_better"] for m in registry.get_task_class("bfcl_simple_java")().declared_metrics()}
    assert declared == {"accuracy": True, "invalid_format": False, "unknown_function": False, "wrong_arg_type": False}
    assert [m["name"] for m in registry.get_task_class("bfcl_irrelevance")().declared_metrics()] == ["accuracy"]
    combined = [m["name"] for m in registry.get_task_class("bfcl_single_turn")().declared_metrics()]
    assert combined[-4:] == list(scores.SUMMARIES)


def test_data_from_a_folder_or_a_question_file(tmp_path):
    folder = bfcl_folder(tmp_path, [question(0), question(1, "Triangle 3 by 4?")],
                         [{"id": "simple_python_0", "ground_truth": AREA_ANSWER},
                          {"id": "simple_python_1", "ground_truth": AREA_ANSWER}])
    cls = registry.get_task_class("bfcl_simple_python")
    for path in (folder, folder / "BFCL_v4_simple_python.json"):
        docs = cls(data_path=str(path)).eval_docs()
        assert [d.id for d in docs] == ["simple_python_0", "simple_python_1"]
        assert docs[1].query == "Triangle 3 by 4?" and docs[0].target == AREA_ANSWER
        assert docs[0].meta["functions"] == [AREA] and docs[0].meta["category"] == "simple_python"


@pytest.mark.parametrize("questions, answers, message", [
    ([json.dumps(question(0)), "{not json"], None, r"BFCL_v4_simple_python\.json:2: invalid JSON"),
    ([{k: v for k, v in question(0).items() if k != "function"}], None,
     r"BFCL_v4_simple_python\.json:1: field 'function' should be a list of function docs"),
    ([dict(question(0), question=[[{"role": "user"}]])], None,
     r"BFCL_v4_simple_python\.json:1: field 'question' \[0\]\[0\] should be a message"),
    ([question(0), question(1)], [{"id": "simple_python_0", "ground_truth": AREA_ANSWER}],
     r"BFCL_v4_simple_python\.json:2: no possible answer with id 'simple_python_1'"),
    ([question(0)], [{"id": "simple_python_0", "ground_truth": [{"geometry.area": {"base": 10}}]}],
     r"possible_answer/BFCL_v4_simple_python\.json:1: field 'ground_truth' \[0\]\.geometry\.area\.base should be a "
     r"list of accepted values"),
    ([question(0), question(0)], [{"id": "simple_python_0", "ground_truth": AREA_ANSWER}],
     r"BFCL_v4_simple_python\.json:2: id 'simple_python_0' appears twice"),
])
def test_bad_data_is_named_by_file_line_and_field(tmp_path, questions, answers, message):
    folder = bfcl_folder(tmp_path, questions, answers if answers is not None else
                         [{"id": "simple_python_0", "ground_truth": AREA_ANSWER}])
    with pytest.raises(DataError, match=message) as e:
        registry.get_task_class("bfcl_simple_python")(data_path=str(folder)).eval_docs()
    assert "\n" not in str(e.value)


def test_missing_files_and_a_missing_package_say_what_to_do(tmp_path, monkeypatch):
    with pytest.raises(DataError, match=r"no BFCL_v4_multiple\.json for BFCL category multiple"):
        registry.get_task_class("bfcl_multiple")(data_path=str(tmp_path)).eval_docs()
    bfcl_folder(tmp_path, [question(0)])
    with pytest.raises(DataError, match=r"possible_answer/BFCL_v4_simple_python\.json: no such file"):
        registry.get_task_class("bfcl_simple_python")(data_path=str(tmp_path)).eval_docs()
    with pytest.raises(DataError, match=r"BFCL_v4_simple_python\.json: this is the file of BFCL category "
                                        r"simple_python, not multiple"):
        registry.get_task_class("bfcl_multiple")(data_path=str(tmp_path / "BFCL_v4_simple_python.json")).eval_docs()
    monkeypatch.setattr(bfcl_data, "installed_data_dir", lambda: None)
    with pytest.raises(DataError, match=r"pip install --no-deps bfcl-eval \(or pass --data bfcl_parallel=PATH"):
        registry.get_task_class("bfcl_parallel")().eval_docs()


def test_java_tasks_need_tree_sitter_before_any_model_loads(monkeypatch):
    from evalkit.tasks.bfcl import decode_tree
    from evalkit.util.extras import MissingExtra

    def missing(language):
        raise MissingExtra("BFCL's java answers are parsed with tree-sitter; ...: pip install 'evalkit-harness[bfcl]'")
    monkeypatch.setattr(decode_tree, "parser", missing)
    with pytest.raises(MissingExtra, match=r"evalkit-harness\[bfcl\]"):
        registry.get_task_class("bfcl_simple_java")().eval_docs()


# ---- prompts ------------------------------------------------------------------------------------
def test_the_prompt_is_bfcls_system_prompt_then_the_question(tmp_path):
    task = registry.get_task_class("bfcl_simple_python")(data_path=str(bfcl_folder(
        tmp_path, [question(0)], [{"id": "simple_python_0", "ground_truth": AREA_ANSWER}])))
    doc = task.eval_docs()[0]
    msgs = task.messages(doc, RunContext(apply_chat_template=True, system_prompt="Be brief."))
    assert [m["role"] for m in msgs] == ["system", "user"]
    system = msgs[0]["content"]
    assert system.startswith("You are an expert in composing functions.You are given a question")
    assert "[func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)]. " \
           " You SHOULD NOT" in system and system.endswith("\n\nBe brief.")
    shown = json.loads(system[system.index("[\n"):system.rindex("]") + 1])
    assert shown[0]["description"] == "Area of a triangle. Note that the provided function is in Python 3 syntax."
    assert doc.meta["functions"] == [AREA]  # the checker reads the docs as the data has them
    text = task.prompt_text(doc, RunContext())
    assert text.endswith("\n\nUser: Area of a triangle with base 10 and height 5?\n\nAssistant:")
    assert task.params(doc, RunContext()).stop == ("\nUser:",) and task.params(doc, RunContext(apply_chat_template=True)).stop == ()


def test_java_docs_are_shown_as_bfcl_shows_them():
    doc = {"name": "A.b", "description": "D.", "parameters": {"type": "dict", "required": [], "properties": {
        "xs": {"type": "ArrayList", "description": "Xs.", "items": {"type": "long"}},
        "o": {"type": "any", "description": "O."}}}}
    (shown,) = prompt.hinted_functions([doc], "simple_java")
    assert shown["description"] == "D. Note that the provided function is in Java 8 SDK syntax."
    assert shown["parameters"]["properties"]["xs"] == {
        "type": "string", "description": "Xs. This is Java ArrayList type parameter in string representation. The list "
        "elements are of type long; they are not in string representation."}
    assert shown["parameters"]["properties"]["o"]["description"].endswith(
        "any type of Java object in string representation.")
    assert "items" in doc["parameters"]["properties"]["xs"]  # a copy: the data stays as it is


# ---- decoding -----------------------------------------------------------------------------------
def test_python_answers_decode_as_bfcl_decodes_them():
    assert decode_python("```\n[geometry.area(base=10, height=2 * 2.5)]\n```") == [
        {"geometry.area": {"base": 10, "height": 5.0}}]
    assert decode_python("f(a=1), g(b=[1, (2, 3)], c={'k': None})") == [{"f": {"a": 1}}, {"g": {"b": [1, (2, 3)],
                                                                                             "c": {"k": None}}}]
    assert decode_python("[f(7, a=+5, b=x, c=h(1), d=h(k=1), e=m[0], g=...)]") == [  # BFCL's rules, quirks too
        {"f": {"a": -5, "b": "x", "c": "h(1)", "d": {"h": {"k": 1}}, "e": "m[0]", "g": "..."}}]
    assert decode_python("") == [] and decode_python("[]") == []
    for bad in ("I cannot help.", "[f(a=math.pi)]", "[f(a=lambda: 1)]", "[f(a=1 < 2)]", "[1, f()]", "[f(a=1"):
        with pytest.raises(DecodeError):
            decode_python(bad)


def test_arithmetic_in_an_answer_is_computed_without_running_the_models_code(tmp_path):
    flag = tmp_path / "ran"
    for code in (f"__import__('os').system('touch {flag}') + 1", f"open('{flag}', 'w').write('x') + 1",
                 "(1).__class__.__base__.__subclasses__() + []", "9 ** 9 ** 9", "'x' * 10 ** 9", "len + 1"):
        with pytest.raises(DecodeError):
            decode_python(f"[f(a={code})]")
    assert not flag.exists()
    assert decode_python("[f(a=abs(-3) + round(2.567, 2), b='ab' * 2, c=[1] + [2], d=2 ** 10 - 1)]") == [
        {"f": {"a": 5.57, "b": "abab", "c": [1, 2], "d": 1023}}]


@needs_tree_sitter
def test_java_and_javascript_answers_decode_as_bfcls_tree_sitter_walk():
    from evalkit.tasks.bfcl.decode_tree import decode_java, decode_javascript
    assert decode_java('[A.b(x=new int[]{1, 2}, y="s p", z=new ArrayList<>(Arrays.asList(1, 2)))]') == [
        {"A.b": {"x": "new int[]{1,2}", "y": "s p", "z": "new ArrayList<>(Arrays.asList(1, 2))"}}]
    assert decode_java("[A.b(m=new HashMap<String, Object>() {{ put(\"k\", 1); }}, n=1);]") == [
        {"A.b": {"m": "new HashMap<String,Object>()", "n": "1"}}]  # BFCL drops the anonymous class body
    assert decode_java("hello world") == {}  # parses, holds no call
    for bad in ("[A.b(x=1)]", "[A.b(x=1, x=2);]"):  # tree-sitter's error recovery; a repeated name
        with pytest.raises(DecodeError):
            decode_java(bad)
    assert decode_javascript("[f(a='q', b=[1, 2], c=x, true)]") == [{"f": {"a": "q", "b": "[1, 2]", "c": "x", None: "true"}}]
    assert decode_javascript("[let x = 1]") is None


# ---- checking -----------------------------------------------------------------------------------
def test_bfcls_checking_rules():
    def verdict(calls, answer=AREA_ANSWER, category="simple_python", **kw):
        return check(category, [AREA], calls, answer, **kw)
    assert verdict([{"geometry.area": {"base": 10, "height": 5}}]).valid  # an int for a float; unit optional
    assert verdict([{"geometry.area": {"base": 10, "height": 5.0, "unit": "UNITS"}}]).valid  # strings standardized
    assert verdict([{"geometry.area": {"base": 10.0, "height": 5.0}}]).error_type == "type_error:simple"
    assert verdict([{"geometry.area": {"base": True, "height": 5.0}}]).error_type == "type_error:simple"
    assert verdict([{"geometry.area": {"base": 10}}]).error_type == "simple_function_checker:missing_required"
    assert verdict([{"geometry_area": {"base": 10, "height": 5.0}}]).error_type == \
        "simple_function_checker:wrong_func_name"
    assert verdict([{"geometry_area": {"base": 10, "height": 5.0}}], underscore_to_dot=True).valid
    two = [{"geometry.area": {"base": [10], "height": [5.0]}}, {"geometry.area": {"base": [3], "height": [4.0]}}]
    calls = [{"geometry.area": {"base": 3, "height": 4.0}}, {"geometry.area": {"base": 10, "height": 5.0}}]
    assert verdict(calls, two, "parallel").valid and not verdict(calls, two, "multiple").valid
    crash = check("simple_python", [{"name": "f", "parameters": {"properties": {}}}], [{"f": {}}], [{"f": {}}])
    assert crash.error_type == "checker_error:KeyError"  # where BFCL's checker itself raises


def test_the_figures_beside_accuracy():
    def figures(text):
        return judge("simple_python", [AREA], AREA_ANSWER, text).metrics
    assert figures("[geometry.area(base=10, height=5)]") == {
        "accuracy": 1.0, "invalid_format": 0.0, "unknown_function": 0.0, "wrong_arg_type": 0.0}
    assert figures("The area is 25.")["invalid_format"] == 1.0
    assert figures("[area(base=10, height=5)]")["unknown_function"] == 1.0
    assert figures("[geometry.area(base='10', height=5)]")["wrong_arg_type"] == 1.0
    assert judge("irrelevance", [AREA], None, "I can't.").valid and not judge("irrelevance", [AREA], None, "[f(a=1)]").valid
    assert judge("live_relevance", [AREA], None, "[f(a=1)]").valid and not judge("live_relevance", [AREA], None, "[]").valid


def test_summaries_weigh_categories_as_bfcls_leaderboard():
    from evalkit.taskapi.items import Sample

    def rows(cat, right, n):
        return [Sample(f"{cat}{i}", "h", "", [], None, {"accuracy": float(i < right)}, extra={"category": cat})
                for i in range(n)]
    samples = [r for c in scores.NON_LIVE_WEIGHTS for r in rows(c, 1, 2)] + rows("irrelevance", 3, 4)
    out = scores.summaries(samples)
    assert set(out) == {"non_live_ast"}  # the others' categories did not run
    assert out["non_live_ast"].value == pytest.approx(0.5) and out["non_live_ast"].n == 12
    assert 0 < out["non_live_ast"].ci_low < 0.5 < out["non_live_ast"].ci_high < 1
    overall = scores.overall_with_missing_as_zero(out)
    assert overall["value"] == pytest.approx(0.05) and "multi_turn" in overall["missing"]


# ---- end to end ---------------------------------------------------------------------------------
@needs_bfcl
def test_evalkit_run_bfcl_simple_python_on_the_bundled_model(tmp_path, tiny_model_dir, cache_dir):
    from evalkit.cli import main
    from evalkit.records import load_run
    out = tmp_path / "results"
    rc = main(["run", "--model", f"hf:{tiny_model_dir}", "--tasks", "bfcl_simple_python", "--limit", "5",
               "--gen-kwargs", "max_tokens=32", "--output", str(out), "--cache-dir", str(cache_dir)])
    assert rc == 0
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    rec = load_run(run_dir)
    entry = rec.run.tasks["bfcl_simple_python"]
    assert set(entry.metrics) == {"accuracy", "invalid_format", "unknown_function", "wrong_arg_type"}
    assert all(m.n == 5 for m in entry.metrics.values()) and entry.metrics["invalid_format"].higher_is_better is False
    assert entry.extra["bfcl_eval_version"] and entry.extra["data"].endswith("data")
    rows = list(rec.samples("bfcl_simple_python"))
    assert [r.doc_id for r in rows] == [f"simple_python_{i}" for i in range(5)]
    for r in rows:
        assert r["prompt"].startswith("You are an expert in composing functions.") and r["prompt"].endswith("Assistant:")
        assert isinstance(r["responses"][0], str) and r["extra"]["category"] == "simple_python"
        assert r["target"] and set(r["metrics"]) == set(entry.metrics)
        assert (r["metrics"]["accuracy"] == 1.0) == (r["extra"]["error_type"] == "")
        assert (r["extracted"] is None) == (r["extra"]["error_type"] == "ast_decoder:decoder_failed")


@pytest.mark.parametrize("text, message", [
    ('[\n  {"question": "not BFCL"}\n]\n', r"other\.json: not a BFCL question file \(BFCL's BFCL_v4_simple_python\.json "
                                           r"holds one JSON object a line; invalid JSON"),
    ('{"prompt": "hi", "answer": 3}\n', r"other\.json:1: not a BFCL question file \(no 'id', 'question', 'function'"),
    ("", r"other\.json: empty"),
])
def test_a_file_that_is_not_bfcls_says_so(tmp_path, text, message):
    """#52 item 12: another JSON file as --data was reported as a missing possible_answer/ folder."""
    f = tmp_path / "other.json"
    f.write_text(text)
    with pytest.raises(DataError, match=message):
        registry.get_task_class("bfcl_simple_python")(data_path=str(f)).eval_docs()
