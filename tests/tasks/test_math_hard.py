"""``math_hard`` against the Open LLM Leaderboard v2's own code (lm-eval's frozen
``tasks/leaderboard/math``), item by item in the same run: the same level-5 problems, the same
4-shot prompt as evalkit's catalog run of ``leaderboard_math_algebra_hard``, and the same two verdicts
(``exact_match`` by math-verify, ``exact_match_original`` by the minerva rule) as lm-eval's
``process_results`` on the same completions."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

import evalkit
from _fakes import ScriptedBackend


def leaderboard_utils():
    pytest.importorskip("lm_eval")
    pytest.importorskip("math_verify")
    import lm_eval
    from pathlib import Path
    path = Path(lm_eval.__file__).parent / "tasks" / "leaderboard" / "math" / "utils.py"
    spec = importlib.util.spec_from_file_location("leaderboard_math_utils", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def answers(solutions: dict) -> ScriptedBackend:
    """Completions that exercise both rules: the gold solution with minerva's closing line, a boxed
    answer without it, a wrong final answer, an equivalent but differently written one, rambling."""
    def reply(r):
        problem = r.prompt.rsplit("Problem:\n", 1)[1].rsplit("\n\nSolution:", 1)[0]
        sol = solutions[problem]
        gold = leaderboard_utils().remove_boxed(leaderboard_utils().last_boxed_only_string(sol))
        k = len(backend.requests) % 5
        return [f" {sol}\nFinal Answer: The final answer is ${gold}$. I hope it is correct.",
                f" So the answer is $\\boxed{{{gold}}}$.",
                " The answer is 7.\nFinal Answer: The final answer is $7$. I hope it is correct.",
                f" Final Answer: The final answer is ${gold} + 0$. I hope it is correct.",
                " I am not sure."][k]
    backend = ScriptedBackend(reply, name="answers", identity={"model": "math-hard-answers"})
    return backend


@pytest.fixture(scope="module")
def hub(tmp_path_factory, shared_data):
    root = tmp_path_factory.mktemp("hub")
    subprocess.run([sys.executable, "-m", "evalkit.tasks.lm_eval_catalog.hub_layouts", "math", str(shared_data),
                    str(root / "math")], check=True, capture_output=True)
    return root / "math"


def test_math_hard_equals_the_leaderboards_prompts_and_verdicts(hub, shared_data):
    utils = leaderboard_utils()
    tests = {}
    for subject in hub.iterdir():
        for line in open(subject / "test.jsonl"):
            d = json.loads(line)
            tests[d["problem"]] = d
    assert sum(d["level"] == "Level 5" for d in tests.values()) == 1324
    solutions = {p: d["solution"] for p, d in tests.items()}
    native = answers(solutions)
    run = evalkit.evaluate(model=native, tasks=["math_hard"], limit=10, data={"math_hard": str(shared_data / "math")},
                           output=None, cache=False)
    rows = run.samples["math_hard"]
    assert len(rows) == 70 and {r["extra"]["subject"] for r in rows} == {
        "Algebra", "Counting & Probability", "Geometry", "Intermediate Algebra", "Number Theory", "Prealgebra",
        "Precalculus"}
    # prompts: the same text as evalkit's catalog run of the leaderboard's algebra subtask
    catalog = answers(solutions)
    evalkit.evaluate(model=catalog, tasks=["lm-eval:leaderboard_math_algebra_hard"], limit=10,
                     data={"lm-eval:leaderboard_math_algebra_hard": str(hub)}, output=None, cache=False)
    assert len(catalog.prompts) == 10 and set(catalog.prompts) <= set(native.prompts)
    # verdicts: the leaderboard's process_results on every completion
    problem = {p.rsplit("Problem:\n", 1)[1].rsplit("\n\nSolution:", 1)[0]: p for p in native.prompts}
    assert len(problem) == 70
    kinds = set()
    for row in rows:
        q = row["prompt"].rsplit("Problem:\n", 1)[1].rsplit("\n\nSolution:", 1)[0]
        d = tests[q]
        assert d["level"] == "Level 5"
        doc = {"problem": q, "solution": d["solution"],
               "answer": utils.remove_boxed(utils.last_boxed_only_string(d["solution"]))}
        text = row["responses"][0] if isinstance(row["responses"][0], str) else row["responses"][0][0]
        want = utils.process_results(doc, [text])
        got = {k: int(v) for k, v in row["metrics"].items()}
        assert got == want, (row["doc_id"], text[:80])
        kinds.add(tuple(want.values()))
    assert len(kinds) >= 3  # both rules right, both wrong, and the two disagreeing
    m = run.tasks["math_hard"].metrics
    assert m["exact_match"].n == 70 and 0 < m["exact_match_original"].value < 1
    assert set(run.tasks["math_hard"].breakdowns) == {f"subject:{s}" for s in {r["extra"]["subject"] for r in rows}}
