"""``--repeats K`` on an lm-eval task: each of the K completions goes through lm-eval's own filters
and ``process_results`` alone, and the row carries avg@K, pass@k, pass^k and maj@K of the task's first
metric, as native tasks do (lm-eval itself would score only the first of them)."""
from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("lm_eval")

import evalkit  # noqa: E402
from _fakes import ScriptedBackend  # noqa: E402

TASK = "lm-eval:gsm8k"


def question(r) -> str:
    return r.prompt.rsplit("Question: ", 1)[1].split("\nAnswer:")[0]


def sampler(golds: dict) -> ScriptedBackend:
    """The gold answer the first ``right`` times a question is asked, then wrong ones (evalkit's engine
    asks K single-completion requests, each with its own seed)."""
    def reply(r):
        j = sum(question(q) == question(r) for q in backend.requests) - 1
        gold, right = golds[question(r)]
        return f"So #### {gold if j < right else int(gold) + 1 + j % 2}"
    backend = ScriptedBackend(reply, name="sampler", identity={"model": "lm-eval-repeats"})
    return backend


def test_repeats_on_an_lm_eval_task_score_every_completion(tmp_path, shared_data):
    import json
    hub = tmp_path / "gsm8k"
    subprocess.run([sys.executable, "-m", "evalkit.tasks.lm_eval_catalog.hub_layouts", "gsm8k", str(shared_data),
                    str(hub)], check=True, capture_output=True)
    test = [json.loads(line) for line in open(next(hub.rglob("test*.jsonl")))][:4]
    right = [4, 3, 1, 0]
    golds = {d["question"]: (d["answer"].split("####")[-1].strip().replace(",", ""), c) for d, c in zip(test, right)}
    backend = sampler(golds)
    run = evalkit.evaluate(model=backend, tasks=[TASK], limit=4, repeats=4, gen_kwargs={"temperature": 0.6},
                           data={TASK: str(hub)}, output=None,
                           cache=False)
    seen = {(question(r), r.params.seed) for r in backend.requests}
    assert len(backend.requests) == 16 and len(seen) == 16  # 4 seeded samples of each question
    rows = run.samples[TASK]
    key = "exact_match,strict-match"
    assert [r["extra"]["repeats"]["n_correct"] for r in rows] == right
    assert [r["metrics"][key] for r in rows] == [1.0, 0.75, 0.25, 0.0]          # the mean over the 4 completions
    assert [r["metrics"]["pass^2"] for r in rows] == [1.0, 0.5, 0.0, 0.0]
    assert [r["metrics"]["maj@4"] for r in rows] == [1.0, 1.0, 0.0, 0.0]       # 1 right vs 2+1 wrong split: no
    m = run.tasks[TASK].metrics
    assert m["pass@4"].value == pytest.approx(0.75) and m["avg@4"].value == pytest.approx(0.5) and m["avg@4"].n == 4
    assert run.tasks[TASK].extra["repeats"]["k"] == 4
    assert len(rows[1]["responses"][0]) == 4 and rows[1]["extra"]["lm_eval"]["doc_id"] == 1
