"""``--repeats K`` on an lm-eval task: each of the K completions goes through lm-eval's own filters
and ``process_results`` alone, and the row carries avg@K, pass@k, pass^k and maj@K of the task's first
metric, as native tasks do (lm-eval itself would score only the first of them)."""
from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("lm_eval")

import evalkit  # noqa: E402
from evalkit.backends.base import Backend  # noqa: E402
from evalkit.taskapi.requests import Completion  # noqa: E402

TASK = "lm-eval:gsm8k"


class Sampler(Backend):
    """The gold answer the first ``right`` times a question is asked, then wrong ones (evalkit's engine
    asks K single-completion requests, each with its own seed)."""

    name = "sampler"

    def __init__(self, golds):
        self.golds, self.seen = golds, []

    def identity(self):
        return {"model": "lm-eval-repeats"}

    def loglikelihood(self, requests):
        raise NotImplementedError

    def generate(self, requests):
        out = []
        for r in requests:
            question = r.prompt.rsplit("Question: ", 1)[1].split("\nAnswer:")[0]
            self.seen.append((question, r.params.seed))
            j = sum(q == question for q, _ in self.seen) - 1
            gold, right = self.golds[question]
            out.append([Completion(f"So #### {gold if j < right else int(gold) + 1 + j % 2}", "stop")])
        return out


def test_repeats_on_an_lm_eval_task_score_every_completion(tmp_path, shared_data):
    import json
    hub = tmp_path / "gsm8k"
    subprocess.run([sys.executable, "-m", "evalkit.tasks.lm_eval_catalog.hub_layouts", "gsm8k", str(shared_data),
                    str(hub)], check=True, capture_output=True)
    test = [json.loads(line) for line in open(next(hub.rglob("test*.jsonl")))][:4]
    right = [4, 3, 1, 0]
    golds = {d["question"]: (d["answer"].split("####")[-1].strip().replace(",", ""), c) for d, c in zip(test, right)}
    backend = Sampler(golds)
    run = evalkit.evaluate(model=backend, tasks=[TASK], limit=4, repeats=4, gen_kwargs={"temperature": 0.6},
                           data={TASK: str(hub)}, output=None,
                           cache=False)
    assert len(backend.seen) == 16 and len(set(backend.seen)) == 16  # 4 seeded samples of each question
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
