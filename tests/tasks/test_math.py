"""MATH / MATH-500: data layouts, answer extraction, minerva normalisation, math-verify in worker
processes (timeouts, threads) and the scorers pinned on real gold answers from MATH-500."""
from __future__ import annotations

import json
import threading
import time
from collections import Counter

import pytest

from evalkit.taskapi import registry
from evalkit.scoring.math_equivalence import (JudgeItem, boxed_answer, extract_answer, final_answer_line,
                                      get_unnormalized_answer, judge_many, last_boxed_only_string, math_verify_equiv,
                                      normalize_final_answer)
from evalkit.taskapi.requests import Completion
from evalkit.taskapi.task import RunContext
from tests.conftest import shared


def math_task(name="math", **opts):
    return registry.get_task_class(name)(**opts)


@pytest.fixture(scope="module")
def math500_docs():
    return {d.id: d for d in math_task("math500", data_path=str(shared("math", "MATH-500"))).eval_docs()}


# ---- data ---------------------------------------------------------------------------------------

def test_full_math_reads_the_original_layout():
    docs = math_task(data_path=str(shared("math", "MATH"))).eval_docs()
    assert len(docs) == 5000 and len({d.id for d in docs}) == 5000
    assert Counter(d.meta["subject"] for d in docs) == {
        "Algebra": 1187, "Counting & Probability": 474, "Geometry": 479, "Intermediate Algebra": 903,
        "Number Theory": 540, "Prealgebra": 871, "Precalculus": 546}
    assert Counter(d.meta["level"] for d in docs) == {1: 437, 2: 894, 3: 1131, 4: 1214, 5: 1324}
    assert docs[0].id == "test/algebra/1.json" and docs[1].id == "test/algebra/2.json"  # numeric file order
    assert all(d.target and d.meta["minerva_gold"] for d in docs)


def test_math500_is_a_subset_with_identical_problems(math500_docs):
    full = {d.id: d for d in math_task(data_path=str(shared("math", "MATH"))).eval_docs()}
    assert len(math500_docs) == 500
    for uid, d in math500_docs.items():
        assert full[uid].query == d.query and full[uid].meta["level"] == d.meta["level"]
    # MATH-500's "answer" field is the boxed answer of the solution in all but a few cleaned-up rows
    same = sum(boxed_answer(d.meta["solution"]) == d.target for d in math500_docs.values())
    assert 480 <= same <= 500


def test_bad_math_record_names_file_and_field(tmp_path):
    from evalkit.taskapi.data import DataError
    f = tmp_path / "test.jsonl"
    f.write_text(json.dumps({"problem": "1+1?", "solution": "2", "subject": "Algebra", "level": 1}) + "\n")
    with pytest.raises(DataError, match=r"test.jsonl:1: .*solution.*boxed"):
        math_task("math500", data_path=str(tmp_path)).eval_docs()


# ---- extraction ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text,boxed", [
    (r"so $\boxed{\frac{3\sqrt{3}}{4}}$.", r"\frac{3\sqrt{3}}{4}"),               # nested braces
    (r"first \boxed{1} then \boxed{\left( 3, \frac{\pi}{2} \right)}", r"\left( 3, \frac{\pi}{2} \right)"),  # last
    (r"$\boxed{\boxed{5}}$", "5"),                 # nested boxes: the innermost last box (lm-eval's rfind)
    (r"the answer is $\boxed 7$", "7"),                                              # \boxed x
    (r"\fbox{12}", "12"),
    (r"unclosed \boxed{\frac{1}{2}", None),
    ("no box here", None),
])
def test_boxed_extraction(text, boxed):
    assert boxed_answer(text) == boxed


def test_final_answer_line_and_minerva_extraction():
    text = "We get 5.\nFinal Answer: The final answer is $\\frac{1}{2}$. I hope it is correct.\n\nProblem:"
    assert final_answer_line(text) == r"\frac{1}{2}"
    assert get_unnormalized_answer(text) == r"$\frac{1}{2}$"
    assert extract_answer(text) == r"\frac{1}{2}"
    assert extract_answer(r"...\boxed{3}\nFinal Answer: The final answer is $4$.") == "3"  # the box wins
    assert get_unnormalized_answer("no final line") == "[invalidanswer]"
    assert last_boxed_only_string(r"a \boxed{x} b") == r"\boxed{x}"


@pytest.mark.parametrize("raw,norm", [
    ("58,500", "58500"),                               # thousands separators go ...
    ("1,-2", "1,-2"),                                  # ... a tuple's comma stays
    (r"90^\circ", "90"),                               # degrees
    (r"\frac{270}7\text{ degrees}", r"\frac{270}7"),  # unit word (a half-braced \frac stays)
    (r"11\sqrt2", r"11\sqrt{2}"),
    (r"\text{(C)}", "(C)"),
    (r"x = \$18.90", "18.90"),
    (r"\left(2,\infty\right)", r"\left(2,\infty\right)"),   # "ft" inside \left survives
])
def test_minerva_normalisation(raw, norm):
    assert normalize_final_answer(raw) == norm


# Real MATH-500 gold answers with candidate predictions: (unique_id, prediction, math_verify, exact_match).
# Where the two disagree, math-verify is right and lm-eval's minerva rule is not (order of a union or of
# a solution list, \left( tuples, and "1" accepted for the two solutions "1,-2").
CASES = [
    ("test/counting_and_probability/737.json", "58500", 1, 1),
    ("test/counting_and_probability/737.json", "58,500", 1, 1),
    ("test/counting_and_probability/737.json", "585", 0, 0),
    ("test/prealgebra/1003.json", r"\frac{270}{7}", 1, 1),
    ("test/prealgebra/1003.json", r"\frac{270}{7} degrees", 1, 1),
    ("test/prealgebra/1003.json", "38.57", 0, 0),
    ("test/prealgebra/1655.json", r"\frac{17}{50}", 1, 1),      # gold is \dfrac{17}{50}
    ("test/prealgebra/1655.json", "0.34", 1, 1),
    ("test/algebra/2043.json", r"(-\infty,2)\cup(3,\infty)", 1, 1),
    ("test/algebra/2043.json", r"(-\infty,2]\cup(3,\infty)", 0, 0),
    ("test/algebra/2043.json", r"(3,\infty)\cup(-\infty,2)", 1, 0),
    ("test/intermediate_algebra/558.json", "(3,4]", 1, 1),
    ("test/intermediate_algebra/558.json", "(3,4)", 0, 0),
    ("test/precalculus/927.json", "90", 1, 1),                  # gold 90^\circ
    ("test/precalculus/927.json", r"90^{\circ}", 1, 1),
    ("test/intermediate_algebra/1388.json", "-2, 1", 1, 0),
    ("test/intermediate_algebra/1388.json", "1", 0, 1),
    ("test/precalculus/819.json", "(C)", 1, 1),                 # gold \text{(C)}
    ("test/algebra/2253.json", r"\frac{3\sqrt3}{4}", 1, 1),
    ("test/precalculus/807.json", r"(3,\frac{\pi}{2})", 1, 0),  # gold \left( 3, \frac{\pi}{2} \right)
    ("test/algebra/1349.json", "Evelyn", 1, 1),                 # gold \text{Evelyn}
]


def _item(doc, pred):
    text = (f"Thus the answer is $\\boxed{{{pred}}}$.\n"
            f"Final Answer: The final answer is ${pred}$. I hope it is correct.")
    return JudgeItem(doc.meta["solution"], text, normalize_final_answer(get_unnormalized_answer(text)),
                     doc.meta["minerva_gold"])


def test_scorers_on_real_gold_answers(math500_docs):
    items = [_item(math500_docs[uid], pred) for uid, pred, _, _ in CASES]
    got = judge_many(items)
    assert all(v["status"] == "ok" for v in got), [v["status"] for v in got]
    assert [(v["math_verify"], v["exact_match"]) for v in got] == [(float(a), float(b)) for _, _, a, b in CASES]


def test_every_math500_gold_matches_itself(math500_docs):
    docs = list(math500_docs.values())[::5]
    got = judge_many([_item(d, d.target) for d in docs])
    assert sum(v["math_verify"] for v in got) == len(docs)
    assert sum(v["exact_match"] for v in got) == len(docs)


def test_workers_are_needed_and_work_from_threads():
    # math-verify's parse uses signal.alarm: it refuses to run outside the main thread ...
    errors = []
    t = threading.Thread(target=lambda: errors.append(_try(lambda: math_verify_equiv("$1/2$", "$0.5$"))))
    t.start()
    t.join()
    assert errors and errors[0] is not None
    # ... while the pool answers from any thread
    out = []
    item = JudgeItem(r"$\boxed{\frac12}$", r"so $\boxed{0.5}$", "0.5", r"\frac{1}{2}")
    t = threading.Thread(target=lambda: out.extend(judge_many([item])))
    t.start()
    t.join()
    assert out == [{"math_verify": 1.0, "exact_match": 1.0, "status": "ok"}]


def _try(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return e
    return None


def slow_judge(item):
    """Module-level (picklable) stand-in for judge_one: hangs on request."""
    if item.completion == "hang":
        time.sleep(60)
    return {"math_verify": 1.0, "exact_match": 1.0, "status": "ok"}


def test_a_hung_check_times_out_and_the_pool_recovers():
    items = [JudgeItem("", c, "", "") for c in ("a", "hang", "b", "c")]
    t0 = time.time()
    got = judge_many(items, timeout_s=4, fn=slow_judge)
    assert time.time() - t0 < 40
    assert [g["status"] for g in got] == ["ok", "timeout", "ok", "ok"]
    assert judge_many([JudgeItem("", "d", "", "")], fn=slow_judge)[0]["status"] == "ok"


# ---- task ---------------------------------------------------------------------------------------

def test_minerva_and_chat_prompts(math500_docs):
    t = math_task("math500")
    doc = math500_docs["test/precalculus/807.json"]
    base = t.prompt_text(doc, RunContext())
    assert base.count("Problem:\n") == 5 and base.endswith("\n\nSolution:")
    assert base.count("Final Answer: The final answer is") == 4
    (req,) = t.requests(doc, RunContext())
    assert req.prompt == base and req.params.stop == ("Problem:",) and req.params.max_tokens == 512
    ctx = RunContext(apply_chat_template=True, render_chat=lambda m: m[-1]["content"], gen_overrides={"max_tokens": 64})
    (chat,) = t.requests(doc, ctx)
    user = chat.messages[-1][1]
    assert user.endswith("put your final answer within \\boxed{}.") and "Problem:" not in user
    assert chat.params.max_tokens == 64 and chat.params.stop == ()
    assert t.num_fewshot == 0  # what run.json records for the zero-shot chat prompt
    forced = math_task("math500", prompt="minerva")
    assert forced.requests(doc, ctx)[0].messages[-1][1].count("Problem:\n") == 5
    with pytest.raises(ValueError, match="prompt must be one of"):
        math_task("math500", prompt="cot")


def test_score_all_and_breakdowns(math500_docs):
    t = math_task("math500")
    ids = ("test/prealgebra/1655.json", "test/precalculus/927.json", "test/algebra/2043.json")
    docs = [math500_docs[u] for u in ids]
    texts = ["So $x=\\boxed{0.34}$.\nFinal Answer: The final answer is $0.34$. I hope it is correct.",
             "The angle is $90^\\circ$.\nFinal Answer: The final answer is $90$. I hope it is correct.",
             "I think it is $\\boxed{(2,3)}$."]
    samples = t.score_all(docs, [[[Completion(x, "stop")]] for x in texts], RunContext())
    assert [s.metrics["math_verify"] for s in samples] == [1.0, 1.0, 0.0]
    assert [s.metrics["exact_match"] for s in samples] == [1.0, 1.0, 0.0]
    assert samples[1].extracted["answer"] == "90" and samples[2].extracted["minerva"] == "[invalidanswer]"
    b = t.breakdowns(samples)
    assert b["subject:Prealgebra"]["math_verify"].value == 1.0 and b["subject:Algebra"]["math_verify"].n == 1
    assert {k for k in b if k.startswith("level:")} == {f"level:{d.meta['level']}" for d in docs}
    # the chat prompt's exact_match reads the last box, not the Final Answer line
    chat = RunContext(apply_chat_template=True, render_chat=lambda m: m[-1]["content"])
    s = t.score_all(docs[:1], [[[Completion("hence \\boxed{\\frac{17}{50}}", "stop")]]], chat)[0]
    assert s.metrics == {"math_verify": 1.0, "exact_match": 1.0}


@pytest.mark.slow
def test_math_end_to_end_on_the_tiny_model(hf_backend, tmp_path):
    from evalkit.run.cache import ResponseCache
    from evalkit.records import load_run
    from evalkit.run.runner import RunConfig, evaluate
    cfg = RunConfig(tasks=["math500", "math"], limit=2, gen_overrides={"max_tokens": 24},
                    data_paths={"math500": str(shared("math", "MATH-500")), "math": str(shared("math", "MATH"))},
                    task_options={"math": {"prompt": "chat"}})
    cache = ResponseCache(tmp_path / "cache" / "responses.sqlite")
    out = evaluate(hf_backend, cfg, cache, str(tmp_path / "results"), progress=False)
    cache.close()
    run = load_run(out.path)
    for name in ("math500", "math"):
        t = run.tasks[name]
        assert t["n_docs"] == 2 and set(t["metrics"]) == {"math_verify", "exact_match"}
        assert t["extra"]["judge_status"] == {"ok": 2}
        assert any(k.startswith("level:") for k in t["breakdowns"])
        rows = list(run.samples(name))
        assert all(r["extra"]["finish_reason"] in ("stop", "length") and isinstance(r["responses"][0], str)
                   for r in rows)
        # (the chat prompt without the chat template makes this instruct model stop at once)
        assert name == "math" or all(r["responses"][0].strip() for r in rows)
    assert run.tasks["math500"]["num_fewshot"] == 4 and run.tasks["math"]["num_fewshot"] == 0
    assert [r["doc_id"] for r in run.samples("math")] == ["test/algebra/1.json", "test/algebra/2.json"]


def test_minerva_functions_match_lm_eval_on_real_solutions():
    try:
        import lm_eval.tasks.minerva_math.utils as lm
    except (ImportError, AssertionError) as e:  # lm-eval's module asserts antlr4 4.11
        pytest.fail(f"lm-eval's minerva_math utils, which the install promises, cannot be imported: {e}")
    from evalkit.scoring import math_equivalence as ours
    docs = math_task(data_path=str(shared("math", "MATH"))).eval_docs()[::10]
    for d in docs:
        sol = d.meta["solution"]
        assert ours.last_boxed_only_string(sol) == lm.last_boxed_only_string(sol), d.id
        boxed = lm.remove_boxed(lm.last_boxed_only_string(sol))
        assert ours.normalize_final_answer(boxed) == lm.normalize_final_answer(boxed), d.id
        assert ours.minerva_gold(sol) == lm.normalize_final_answer(boxed), d.id
        tail = sol[-120:] + "\nFinal Answer: The final answer is $x$. I hope it is correct."
        assert ours.get_unnormalized_answer(tail) == lm.get_unnormalized_answer(tail), d.id
        assert ours.normalize_final_answer(tail) == lm.normalize_final_answer(tail), d.id


@pytest.mark.slow
@pytest.mark.vllm
def test_math500_through_vllm(vllm_backend):
    from evalkit.run.cache import NullCache
    from evalkit.run.runner import RunConfig, evaluate
    cfg = RunConfig(tasks=["math500"], limit=3, gen_overrides={"max_tokens": 48},
                    data_paths={"math500": str(shared("math", "MATH-500"))})
    out = evaluate(vllm_backend, cfg, NullCache(), None, progress=False)
    t = out.to_dict()["tasks"]["math500"]
    assert t["n_docs"] == 3 and t["extra"]["judge_status"] == {"ok": 3}
    rows = out.samples["math500"]
    # (the third item's greedy answer is an immediate end of text, on the hf backend too)
    assert [bool(r["responses"][0].strip()) for r in rows] == [True, True, False]
    assert not any("Problem:" in r["responses"][0] for r in rows)  # cut at the stop sequence
    assert {r["extra"]["finish_reason"] for r in rows} <= {"stop", "length"}
