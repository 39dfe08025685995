"""GRPO group diagnostics: figures by hand, and from real run records (saved predictions, a real model)."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import shared
from evalkit.cli import main
from evalkit.rl.diagnostics import group_diagnostics, learnable_items, run_diagnostics


def test_group_figures_by_hand():
    d = group_diagnostics({"a": [1, 1, 1, 1], "b": [0, 0, 0, 0], "c": [1, 0, 0, 0], "d": [1, 1, 0, 0]})
    assert d["n_items"] == 4 and d["G"] == [4, 4]
    assert d["pass_at_k"][1] == pytest.approx((1 + 0 + 0.25 + 0.5) / 4)
    assert d["pass_at_k"][2] == pytest.approx((1 + 0 + (1 - 3 / 6) + (1 - 1 / 6)) / 4)  # 1 - C(n-c,k)/C(n,k)
    assert d["pass_at_k"][4] == pytest.approx(0.75)
    assert d["share_all_equal"] == 0.5 and d["share_learnable"] == 0.5
    assert d["mean_group_std"] == pytest.approx((math.sqrt(0.1875) + 0.5) / 4)
    assert learnable_items(d) == ["c", "d"]


def _predictions(path: Path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def only_run(folder: Path) -> Path:
    (run,) = [p for p in folder.iterdir() if (p / "run.json").exists()]
    return run


def test_diagnostics_from_saved_predictions(tmp_path):
    recs = [json.loads(x) for x in (shared("gsm8k") / "test.jsonl").read_text().splitlines()[:4]]
    pattern = [[1, 1, 1, 1], [0, 0, 0, 0], [1, 0, 0, 0], [1, 1, 0, 0]]
    rows = [{"doc_id": str(i), "predictions": [r["answer"] if x else r["answer"].rsplit("####", 1)[0] + "#### 99999"
                                               for x in p]} for i, (r, p) in enumerate(zip(recs, pattern))]
    assert main(["score", "--task", "gsm8k", "--predictions", _predictions(tmp_path / "p.jsonl", rows),
                 "--data", str(shared("gsm8k")), "--output", str(tmp_path / "out")]) == 0
    run = only_run(tmp_path / "out")
    entry = json.loads((run / "run.json").read_text())["tasks"]["gsm8k"]
    assert entry["verifier_hash"].startswith("evk-")
    # recorded by the scoring itself, with CIs over the 4 items; per-item figures in the samples
    grpo = entry["grpo"]
    assert grpo["G"] == [4, 4] and grpo["n_items"] == 4 and grpo["gold_source"] == "task data"
    assert grpo["figures"]["share_all_equal"]["value"] == 0.5 and grpo["figures"]["pass@4"]["value"] == 0.75
    lo, hi = grpo["figures"]["share_learnable"]["ci_low"], grpo["figures"]["share_learnable"]["ci_high"]
    assert 0 < lo < 0.5 < hi < 1 and grpo["figures"]["share_all_equal"]["higher_is_better"] is False
    rows = [json.loads(x) for x in (run / "samples_gsm8k.jsonl").read_text().splitlines()]
    assert [r["grpo"]["n_correct"] for r in rows] == [4, 0, 1, 2]
    del entry["grpo"]                                    # an older record: the command recomputes it
    data = json.loads((run / "run.json").read_text()); data["tasks"]["gsm8k"] = entry
    (run / "run.json").write_text(json.dumps(data))
    learn = tmp_path / "learn.jsonl"
    assert main(["grpo-diagnostics", str(run), "--export-learnable", str(learn)]) == 0
    assert json.loads((run / "run.json").read_text())["tasks"]["gsm8k"]["grpo"] == grpo
    d = json.loads((run / "grpo_diagnostics.json").read_text())["tasks"]["gsm8k"]
    assert d["share_all_equal"] == 0.5 and d["pass_at_k"]["4"] == 0.75 and d["gold_source"] == "task data"
    got = [json.loads(x) for x in learn.read_text().splitlines()]
    assert [(g["doc_id"], g["pass_rate"]) for g in got] == [("2", 0.25), ("3", 0.5)]
    assert json.loads(got[0]["gold"])["answer"] == recs[2]["answer"]


def test_code_task_uses_the_runs_sandbox_verdicts(tmp_path):
    recs = [json.loads(x) for x in (shared("mbpp") / "mbpp.jsonl").read_text().splitlines()]
    recs = [r for r in recs if 11 <= r["task_id"] <= 13]
    rows = [{"doc_id": str(r["task_id"]), "predictions": [r["code"], "def f():\n    return 0\n"]} for r in recs]
    assert main(["score", "--task", "mbpp", "--predictions", _predictions(tmp_path / "p.jsonl", rows),
                 "--data", str(shared("mbpp")), "--output", str(tmp_path / "out")]) == 0
    out = run_diagnostics(str(only_run(tmp_path / "out")))
    d = out["tasks"]["mbpp"]
    assert d["gold_source"] == "sandbox verdicts in the samples"
    assert {i: (s["n"], s["n_correct"]) for i, s in d["items"].items()} == {"11": (2, 1), "12": (2, 1), "13": (2, 1)}
    assert d["share_learnable"] == 1.0 and d["share_all_equal"] == 0.0


@pytest.mark.slow
def test_real_model_run_with_n_samples(tmp_path, tiny_model_dir):
    """A real n=3 sampled run: the verifier's rescoring of the first response equals the run's metric."""
    env = {**os.environ, "EVALKIT_TORCH_THREADS": "1"}
    r = subprocess.run([sys.executable, "-m", "evalkit", "run", "--model", f"hf:{tiny_model_dir}", "--tasks", "gsm8k",
                        "--limit", "2", "--num-fewshot", "1", "--data", f"gsm8k={shared('gsm8k')}", "--gen-kwargs",
                        "n=3,temperature=1.0,max_tokens=16", "--output", str(tmp_path / "out"),
                        "--cache-dir", str(tmp_path / "cache")], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    run = only_run(tmp_path / "out")
    rows = [json.loads(x) for x in (run / "samples_gsm8k.jsonl").read_text().splitlines()]
    assert all(len(x["responses"]) == 3 for x in rows)
    out = run_diagnostics(str(run))
    d = out["tasks"]["gsm8k"]
    assert d["G"] == [3, 3] and set(d["pass_at_k"]) == {1, 2, 3}
    from evalkit.rl import Verifier
    ver = Verifier("gsm8k", use_guards=False)
    for x in rows:
        # n > 1: the row's metrics are means over the samples; each sample's own are in extra.repeats
        first = x["extra"]["repeats"]["sample_metrics"][0]
        assert ver.verify(x["target"], x["responses"][0]).reward == first["exact_match_numeric"]
    grpo = json.loads((run / "run.json").read_text())["tasks"]["gsm8k"]["grpo"]
    assert grpo["G"] == [3, 3] and grpo["figures"]["pass@3"]["value"] == pytest.approx(d["pass_at_k"][3])
    assert all(set(r["grpo"]) >= {"n", "n_correct", "pass_rate", "std"} for r in rows)
