"""The judged benchmarks end to end on the real engine: the bundled model answers and judges (vLLM on
CPU), a few items each; every judged figure comes with the judge's reliability, and a rerun asks
neither the model nor the judge anything (both cached, each under its own identity)."""
from __future__ import annotations

import json
import math

import pytest

import evalkit

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

TASKS = {"arena_hard_v2": 2, "alpaca_eval": 2, "healthbench": 1, "writingbench": 1}
#: offline here: style control counts tokens with the bundled model's tokenizer (upstream: tiktoken's gpt-4o)
STYLE_TOKENS = "style_tokens"


def test_each_judged_benchmark_runs_on_the_bundled_model_as_answerer_and_judge(vllm_backend, tiny_model_dir,
                                                                              tmp_path):
    task_args = {t: {"judge_max_tokens": 48} for t in TASKS}
    task_args["arena_hard_v2"][STYLE_TOKENS] = str(tiny_model_dir)
    # WritingBench's first query is 17k tokens (over the model's 8k): the shortest one keeps the test quick
    from evalkit.tasks.judged import wheel_data
    rows = [json.loads(x) for x in (wheel_data.benchmark_dir("writingbench", "writingbench") / "benchmark_query" /
                                    "benchmark_all.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    (tmp_path / "wb.jsonl").write_text(json.dumps(min(rows, key=lambda r: len(r["query"]))) + "\n")
    opts = dict(apply_chat_template=True, gen_kwargs={"max_tokens": 48}, judge=vllm_backend, task_args=task_args,
                data={"writingbench": str(tmp_path / "wb.jsonl")}, cache_dir=str(tmp_path / "cache"),
                output=str(tmp_path / "out"))
    runs = {t: evalkit.evaluate(vllm_backend, [t], limit=n, **opts) for t, n in TASKS.items()}
    for task, run in runs.items():
        entry = run.tasks[task]
        rel = entry.extra["judge"]
        assert rel and all(f["asks"] > 0 for f in rel.values()), task
        assert run.judge["spec"] and run.judge_engine["computed"] > 0, task
        # a figure whose every judge reply lacked a verdict has no value (NaN in memory, null in the record)
        assert all(math.isnan(m.value) or math.isfinite(m.value) for m in entry.metrics.values()), task
        for row in run.samples[task]:
            assert row["extra"]["judged"], task
    for task, run in runs.items():
        again = evalkit.evaluate(vllm_backend, [task], limit=TASKS[task], **opts)
        assert again.engine.get("computed", 0) == 0 and again.judge_engine.get("computed", 0) == 0, task
        assert values(again.tasks[task]) == values(run.tasks[task]), task
    # the rubric graders gave verdicts: real figures, not only parse failures
    assert any(math.isfinite(m.value) for t in ("healthbench", "writingbench") for m in runs[t].tasks[t].metrics.values())


def values(entry) -> dict:
    return {k: None if math.isnan(m.value) else m.value for k, m in entry.metrics.items()}
