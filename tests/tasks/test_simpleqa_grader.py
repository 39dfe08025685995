"""SimpleQA's graded correctness against simple-evals' own ``simpleqa_eval.py`` (``nvidia-simple-evals``):
its ``SimpleQAEval`` runs whole here (its hub load pointed at the made-up rows of
``tests/data/simpleqa_hub``, in the hub's layout, through the real ``datasets`` loader; a scripted
model and grader), and its figures, read from the frame of its ``__call__`` (it computes
``accuracy_given_attempted`` and ``f1`` and returns only the means), equal evalkit's on the same grades:
through the pure functions, through the ``simpleqa`` task's hub loader, and through the real CLI."""
from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from _scripted_judge import ScriptedServer
from evalkit.tasks.judged import simpleqa as ours
from evalkit.tasks.judged.simpleqa import GradedCorrectness, SimpleQA

sq = pytest.importorskip("simple_evals.evals.simpleqa_eval")
datasets = pytest.importorskip("datasets")

HUB = Path(__file__).resolve().parents[1] / "data" / "simpleqa_hub"
GRADER_HEAD = "Your job is to look at a question, a gold target, and a predicted answer"


def hub_rows() -> list:
    with open(HUB / "simple_qa_test_set.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def field(prompt: str, name: str) -> str:
    return prompt.rsplit(f"\n{name}: ", 1)[1].split("\n", 1)[0]


def model(question: str) -> str:
    """The scripted model: right, wrong, unsure or off-format, by question."""
    rows = hub_rows()
    k = next(i for i, r in enumerate(rows) if r["problem"] == question)
    return [rows[k]["answer"], "Definitely 42, {braces} and all.", "I don't know.", "hmm"][k % 4]


def grader(prompt: str) -> str:
    """The scripted grader: a letter in several shapes, none at all for an off-format answer."""
    answer, gold = field(prompt, "Predicted answer"), field(prompt, "Gold target")
    if answer == gold:
        return "A"
    if answer == "I don't know.":
        return "C: NOT_ATTEMPTED"
    return "no letter here" if answer == "hmm" else "The grade is B"


def script(messages):
    text = messages[-1]["content"]
    return grader(text) if text.startswith(GRADER_HEAD) else model(text)


def run_upstream(tmp_path, rows: list, answer=model, grade=grader) -> dict:
    """simple-evals' ``SimpleQAEval`` on ``rows``: {aggregate, output, result, prompts, asked}."""
    sent, asked = [], []

    async def judge(messages):
        assert len(messages) == 1 and messages[0]["role"] == "user"
        sent.append(messages[0]["content"])
        return grade(messages[0]["content"])

    class Sampler:
        def _pack_message(self, content, role):
            return {"role": role, "content": content}

        async def __call__(self, messages, seed=None):
            asked.append(messages)
            return answer(messages[-1]["content"])

    class Frame:  # the dataset upstream loads, as ``load_dataset(...)["test"].to_pandas()`` reads it
        def __getitem__(self, split):
            import pandas as pd
            return type("D", (), {"to_pandas": lambda self: pd.DataFrame(rows)})()

    captured = {}
    code = sq.SimpleQAEval.__call__.__code__

    def tracer(frame, event, arg):
        if frame.f_code is not code:
            return None

        def local(frame, event, arg):
            if event == "return" and "output_d" in frame.f_locals:
                captured["aggregate"] = dict(frame.f_locals["aggregate_metrics"])
                captured["output"] = dict(frame.f_locals["output_d"])
            return local
        return local

    mp = pytest.MonkeyPatch()
    mp.setattr(sq, "load_dataset", lambda name: Frame())
    mp.setattr(sq.common, "load_judge", lambda config: judge)
    before = sys.gettrace()
    try:
        ev = sq.SimpleQAEval(grader_config={}, cache_dir=str(tmp_path / f"cache{len(list(tmp_path.iterdir()))}"))
        sys.settrace(tracer)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            result = asyncio.run(ev(Sampler()))
    finally:
        sys.settrace(before)
        mp.undo()
    return {**captured, "result": result, "prompts": sent, "asked": asked}


def evalkit_figures(grades: list) -> dict:
    """evalkit's figures from the replies: the metric's sample values and its group's computation."""
    metric = GradedCorrectness()
    samples = [type("S", (), {"metrics": metric.values(None, "", {"grade": metric.parse(None, g)})})() for g in grades]
    group = metric.declarations()[-1]
    return {**{k: float(np.mean([s.metrics[k] for s in samples])) for k in samples[0].metrics},
            **group.compute(group.items(samples))}


def test_template_prompt_and_letter_are_upstreams():
    assert ours.GRADER_TEMPLATE == sq.GRADER_TEMPLATE
    ev = object.__new__(sq.SimpleQAEval)
    for reply in ("A", "B", "C", "CORRECT", "INCORRECT", "The grade is B", "b", "", "no letter here", "NOT_ATTEMPTED",
                  "Answer: A\nB", "A: CORRECT"):
        sent = []

        async def judge(messages, reply=reply):
            sent.append(messages)
            return reply
        ev.grader_model = judge
        letter = asyncio.run(ev.grade_sample("Q {x}?", "gold {y}", "pred {z} {}"))
        metric = GradedCorrectness()
        asks = metric.asks(type("D", (), {"query": "Q {x}?", "target": "gold {y}"})(), "pred {z} {}")
        assert [list(a.messages) for a in asks] == [[("user", m[0]["content"])] for m in sent]  # byte for byte
        verdict = metric.parse(asks[0], reply)
        assert (verdict or "C") == letter, reply
        assert (verdict is None) == (ours.GRADE.search(reply) is None)  # counted as a parse failure, graded C


@pytest.mark.parametrize("grades", [
    ["A", "B", "C", "A", "A", "B", "zz", "C"], ["C", "C", "C"], ["A"] * 4, ["B", "B", "C"], ["A", "C", "no"],
    list("ABCCBABACCABBBAACAACBCABCA")])
def test_figures_equal_upstreams_aggregation(tmp_path, grades):
    rows = [{"metadata": "{}", "problem": f"q{i}", "answer": f"a{i}"} for i in range(len(grades))]
    up = run_upstream(tmp_path, rows, answer=lambda q: q, grade=lambda p: grades[int(field(p, "Question")[1:])])
    mine = evalkit_figures(grades)
    expected = {**up["aggregate"], "f1": up["output"]["f1"]}
    assert up["output"]["accuracy_given_attempted"] == up["aggregate"]["accuracy_given_attempted"]
    assert set(expected) | {"is_not_attempted"} == set(mine)
    for k, v in expected.items():
        assert mine[k] == pytest.approx(v, abs=1e-15), k
    assert mine["is_not_attempted"] == pytest.approx(up["result"].metrics["is_not_attempted"])


def test_the_task_reads_the_hub_dataset_upstream_loads(tmp_path, monkeypatch):
    """``simpleqa`` asks ``datasets.load_dataset`` for upstream's hub id and split; the real loader
    reads the made-up rows in the hub's layout, as ``--data`` reads the folder or the file."""
    real, calls = datasets.load_dataset, []

    def load(path, name=None, **kw):
        calls.append((path, name, kw.get("split")))
        return real(str(HUB), name, cache_dir=str(tmp_path / "hf"), **kw)
    monkeypatch.setattr(datasets, "load_dataset", load)
    from_hub = SimpleQA().load_docs("test")
    assert calls == [("basicv8vc/SimpleQA", None, "test")]
    rows = hub_rows()
    assert [(d.query, d.target, d.meta["metadata"]) for d in from_hub] == [(r["problem"], r["answer"], r["metadata"])
                                                                          for r in rows]
    for local in (HUB, HUB / "simple_qa_test_set.csv"):
        docs = SimpleQA(data_path=str(local)).load_docs("test")
        assert [(d.id, d.query, d.target) for d in docs] == [(d.id, d.query, d.target) for d in from_hub]


@pytest.mark.server
def test_cli_run_matches_upstream(tmp_path):
    with ScriptedServer(script) as srv:
        cmd = [sys.executable, "-m", "evalkit", "run", "--model", srv.spec(),
               "--model-args", f"base_url={srv.base_url}",
               "--tasks", "simpleqa", "--data", f"simpleqa={HUB}", "--judge", srv.spec(),
               "--judge-args", f"base_url={srv.base_url}", "--output", str(tmp_path / "out"),
               "--cache-dir", str(tmp_path / "cache")]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        bodies = list(srv.bodies)
    run_dir = next((tmp_path / "out").iterdir())
    task = json.loads((run_dir / "run.json").read_text())["tasks"]["simpleqa"]
    rows = [json.loads(x) for x in next(run_dir.glob("samples_simpleqa*.jsonl")).read_text().splitlines()]

    up = run_upstream(tmp_path, hub_rows())
    asked = [b["messages"] for b in bodies if b["messages"][-1]["content"].startswith(GRADER_HEAD)]
    answered = [b["messages"] for b in bodies if not b["messages"][-1]["content"].startswith(GRADER_HEAD)]
    assert sorted(m[0]["content"] for m in asked) == sorted(up["prompts"])  # the grader prompts, byte for byte
    key = lambda msgs: json.dumps(msgs, sort_keys=True)  # noqa: E731
    assert sorted(map(key, answered)) == sorted(map(key, up["asked"]))  # the model's prompts

    grades = {"CORRECT": 0, "INCORRECT": 0, "NOT_ATTEMPTED": 0}
    for row in rows:
        rec = row["extra"]["judged"]["simpleqa"]
        grades[rec["grade"]] += 1
        assert rec["parse_failures"] == (["grade"] if rec["defaulted"] else [])
    assert all(grades.values())  # every grade, and a defaulted one, occur
    assert task["extra"]["judge"]["simpleqa"]["parse_failures"] == sum(r["extra"]["judged"]["simpleqa"]["defaulted"]
                                                                       for r in rows) > 0
    m = task["metrics"]
    expected = {**up["aggregate"], "f1": up["output"]["f1"],
                "is_not_attempted": up["result"].metrics["is_not_attempted"]}
    for k, v in expected.items():
        assert m[k]["value"] == pytest.approx(v, abs=1e-12), k
        assert m[k]["n"] == len(rows) and m[k]["ci_low"] <= m[k]["value"] <= m[k]["ci_high"], k
    for k in ("is_correct", "is_incorrect", "is_not_attempted"):  # upstream's stderr of the means
        assert m[k]["stderr"] == pytest.approx(up["result"].metrics[f"{k}:stderr"], abs=1e-12), k
    for k in ("is_given_attempted", "accuracy_given_attempted", "f1"):
        assert m[k]["kind"] == "corpus" and m[k]["stderr"] is not None, k
