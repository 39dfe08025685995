"""The "Writing a task" page's examples (docs/writing-a-task.md), taken from the page itself, run on the bundled model."""
from __future__ import annotations

import json
import re

import pytest

from conftest import REPO

pytestmark = pytest.mark.slow


def readme_task_files() -> list[str]:
    text = (REPO / "docs" / "writing-a-task.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 3, "the page shows a multiple-choice task, a generation task and a judged metric"
    return blocks


def test_readme_task_examples_run_end_to_end(tmp_path, tiny_model_dir, cache_dir):
    from evalkit.cli import main

    tasks = tmp_path / "mytasks"
    tasks.mkdir()
    mc, gen, _judged = readme_task_files()  # the judged one: tests/judges/test_judged_layer.py
    (tasks / "capitals.py").write_text(mc)
    (tasks / "arithmetic.py").write_text(gen)
    caps = tmp_path / "capitals.jsonl"
    caps.write_text("".join(json.dumps(r) + "\n" for r in [
        {"country": "France", "choices": ["Berlin", "Paris", "Rome"], "gold": 1},
        {"country": "Italy", "choices": ["Rome", "Madrid", "Oslo"], "gold": 0},
        {"country": "Japan", "choices": ["Seoul", "Beijing", "Tokyo"], "gold": 2}]))
    sums = tmp_path / "sums.jsonl"
    sums.write_text("".join(json.dumps({"a": a, "b": b}) + "\n" for a, b in [(2, 3), (10, 5), (7, 1)]))
    out = tmp_path / "results"
    rc = main(["run", "--model", f"hf:{tiny_model_dir}", "--include-path", str(tasks),
               "--tasks", "capitals,arithmetic", "--data", f"capitals={caps}", "--data", f"arithmetic={sums}",
               "--output", str(out), "--cache-dir", str(cache_dir)])
    assert rc == 0
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    run = json.loads((run_dir / "run.json").read_text())
    assert set(run["tasks"]["capitals"]["metrics"]) == {"acc", "acc_norm"}
    m = run["tasks"]["arithmetic"]["metrics"]
    assert set(m) == {"exact_match", "no_number"} and m["no_number"]["higher_is_better"] is False
    assert run["tasks"]["arithmetic"]["n_docs"] == 3 and m["exact_match"]["n"] == 3
    rows = [json.loads(line) for line in (run_dir / "samples_arithmetic.jsonl").read_text().splitlines()]
    # the framework built the samples: prompt, response texts, target, finish reason, extracted answer
    assert [r["target"] for r in rows] == ["5", "15", "8"]
    assert all(r["prompt"].endswith("=") and isinstance(r["responses"][0], str) for r in rows)
    assert all(r["extra"]["finish_reason"] in ("stop", "length") for r in rows)
    for r in rows:
        first = re.search(r"-?\d+", r["responses"][0])
        assert r["extracted"] == (first.group(0) if first else None)
        assert r["metrics"]["exact_match"] == float(r["extracted"] == r["target"])
