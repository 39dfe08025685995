"""Best-of-N figures: the metric definitions (against scikit-learn's AUROC and hand counts) and an
end-to-end GSM8K run with the bundled model sampling and the reward-model fixture scoring.

The fixture's rewards are NOISE (SmolLM2 with a yes/no head): the end-to-end tests prove the
plumbing (every completion rewarded, cached, resumed, recorded), not that best-of-N helps.
"""
from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import evalkit_cli

from evalkit.scoring import best_of_n
from evalkit.run.reward_phase import vote_of
from tests.conftest import shared


def test_curves_on_hand_counted_problems():
    problems = [
        {"correct": [0, 1, 0, 1], "votes": ["3", "5", "3", "5"], "rewards": [0.1, 0.9, 0.2, 0.3]},
        {"correct": [0, 0, 0, 1], "votes": ["7", "7", None, "9"], "rewards": [0.5, 0.4, 0.3, 0.6]},
        {"correct": [1, 1, 1, 1], "votes": ["2", "2", "2", "2"], "rewards": [0.0, 0.0, 0.0, 0.0]},
    ]
    res = best_of_n.compute(problems, seed=1)
    assert res["ns"] == [1, 2, 4] and res["n_samples"] == 4
    c = res["curves"]
    assert c["pass@1"] == pytest.approx([1 / 3, (0.5 + 0 + 1) / 3, (0.5 + 0.25 + 1) / 3])
    # maj@2: p1 tie 3/5 -> first given "3" (wrong); p2 "7" wrong; p3 right. maj@4: p1 tie -> "3"; p2 "7"; p3.
    assert c["maj"] == pytest.approx([1 / 3, 1 / 3, 1 / 3])
    assert c["oracle"] == pytest.approx([1 / 3, 2 / 3, 1.0])
    # best-of: p1 top reward at index 1 (right) from N=2; p2 index 3 only at N=4; p3 ties -> first (right)
    assert c["rm_best_of"] == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert res["metrics"]["rm_best_of@4"]["value"] == pytest.approx(1.0)
    assert res["metrics"]["rm_best_of@4"]["ci_low"] < 1.0  # an interval, not a point


def test_auroc_matches_scikit_learn_and_bootstrap_is_seeded():
    sk = pytest.importorskip("sklearn.metrics")
    rng = random.Random(7)
    problems = [{"correct": [float(rng.random() < 0.4) for _ in range(8)], "votes": [None] * 8,
                 "rewards": [round(rng.gauss(0, 1), 1) for _ in range(8)]} for _ in range(30)]
    labels = [c for p in problems for c in p["correct"]]
    scores = [r for p in problems for r in p["rewards"]]
    res = best_of_n.compute(problems, seed=3, task="t")
    assert res["metrics"]["rm_auroc"]["value"] == pytest.approx(sk.roc_auc_score(labels, scores), abs=1e-12)
    assert res["metrics"]["rm_auroc"] == best_of_n.compute(problems, seed=3, task="t")["metrics"]["rm_auroc"]
    assert "maj" not in res["curves"] and "maj@8" not in res["metrics"]  # no votes (code): no maj@N
    one_class = [{"correct": [1, 1], "votes": [None, None], "rewards": [0.1, 0.2]}]
    assert best_of_n.compute(one_class)["metrics"]["rm_auroc"]["value"] is None


def test_step_aggregations_on_hand_checked_values():
    """min / last / product of per-step rewards, and how each changes which completion best-of-N picks."""
    from evalkit.scoring.step_agg import aggregate_steps, check_step_agg
    steps = [[0.9, 0.2, 0.8], [0.6, 0.7], [0.5]]
    want = {"min": [0.2, 0.6, 0.5], "last": [0.8, 0.7, 0.5], "product": [0.144, 0.42, 0.5]}
    correct = [1, 0, 0]
    picked = {"min": 0.0, "last": 1.0, "product": 0.0}  # min picks #2 (0.6), last #1 (0.8), product #3 (0.5)
    for how, values in want.items():
        got = [aggregate_steps(x, how) for x in steps]
        assert got == pytest.approx(values, abs=1e-12)
        res = best_of_n.compute([{"correct": correct, "votes": [None] * 3, "rewards": got}])
        assert res["metrics"]["rm_best_of@3"]["value"] == picked[how]
    assert check_step_agg(None, "none") is None and check_step_agg("min", "none") == "min"
    with pytest.raises(ValueError, match="activation=sigmoid"):
        check_step_agg("product", "none")
    with pytest.raises(ValueError, match="expected one of min, last, product"):
        check_step_agg("mean", "sigmoid")


def test_votes():
    assert vote_of("number", {"strict": "[invalid]", "flexible": "1,072.00"}) == "1072"
    assert vote_of("number", {"strict": "$5", "flexible": "9"}) == "5"
    assert vote_of("number", {"strict": "[invalid]", "flexible": "[invalid]"}) is None
    assert vote_of("math", {"answer": "\\frac{1}{2} "}) == "\\frac{1}{2}"
    assert vote_of("code", None) is None


# ---- end to end on the bundled model + the fixture ------------------------------------------------
@pytest.fixture(scope="module")
def rm_dir():
    pytest.importorskip("transformers")
    from _reward_session import fixture_dir
    return fixture_dir()


def _args(tiny_model_dir, rm_dir, n_docs):
    return ["run", "--model", f"hf:{tiny_model_dir}", "--model-args", "chunk_size=1", "--tasks", "gsm8k",
            "--limit", str(n_docs), "--num-fewshot", "1", "--data", f"gsm8k={shared('gsm8k')}",
            "--gen-kwargs", "n=4,temperature=0.8,max_tokens=16", "--reward-model", f"hf:{rm_dir}"]


_evalkit = evalkit_cli


def _rows(db: Path, kind: str) -> int:
    try:
        with sqlite3.connect(db) as c:
            return c.execute("SELECT COUNT(*) FROM responses WHERE kind = ?", (kind,)).fetchone()[0]
    except sqlite3.Error:
        return 0


def _run_dir(results: Path) -> Path:
    [d] = [p for p in results.iterdir() if (p / "run.json").exists()]
    return d


@pytest.mark.slow
def test_best_of_n_gsm8k_killed_and_resumed(tmp_path, tiny_model_dir, rm_dir):
    n_docs = 3
    args = _args(tiny_model_dir, rm_dir, n_docs)
    cache = tmp_path / "cache"
    db = cache / "responses.sqlite"
    env = {**os.environ, "EVALKIT_TORCH_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "evalkit", *args, "--output", str(tmp_path / "killed"),
                             "--cache-dir", str(cache)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 400
    while _rows(db, "generate") < 1 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    gen_before = _rows(db, "generate")  # each of the 4 samples of a problem is cached alone (evalkit.run.repeats_split)
    assert 1 <= gen_before < 4 * n_docs, f"kill landed mid-run ({gen_before} of {4 * n_docs} samples generated)"

    r = _evalkit(*args, "--output", str(tmp_path / "resumed"), "--cache-dir", str(cache))
    assert r.returncode == 0, r.stderr
    for name in ("maj@4", "oracle@4", "rm_best_of@4", "rm_auroc", "pass@1"):
        assert name in r.stdout
    run_dir = _run_dir(tmp_path / "resumed")
    run = json.loads((run_dir / "run.json").read_text())
    assert run["engine"]["cached"] == gen_before and run["engine"]["computed"] == 4 * n_docs - gen_before
    rm = run["reward_model"]
    assert rm["pooling"]["activation"] == "none" and rm["backend"] == "hf-reward"
    assert rm["engine"]["computed"] == rm["engine"]["unique"] > 0
    bon = run["tasks"]["gsm8k"]["best_of_n"]
    assert bon["ns"] == [1, 2, 4] and bon["verifier_metric"] == "exact_match_numeric"
    assert set(bon["curves"]) == {"pass@1", "maj", "oracle", "rm_best_of"}
    for name in ("maj@4", "oracle@4", "rm_best_of@4", "rm_auroc"):
        assert name in bon["metrics"] and name in run["tasks"]["gsm8k"]["metrics"]
    rows = [json.loads(x) for x in (run_dir / "samples_gsm8k.jsonl").read_text().splitlines()]
    assert all(len(x["best_of_n"]["rewards"]) == len(x["responses"]) == 4 for x in rows)

    # the rewards are the reward model's own (recomputed here, outside the engine)
    from evalkit.backends.reward_hf import HFRewardBackend
    from evalkit.taskapi.requests import RewardRequest
    from evalkit.tasks.gsm8k import GSM8K
    docs = GSM8K(data_path=str(shared("gsm8k"))).eval_docs()[:n_docs]
    hf = HFRewardBackend(rm_dir)
    want = hf.reward([RewardRequest.pair(docs[0].query, t) for t in rows[0]["responses"]])
    assert max(abs(a - b) for a, b in zip(want, rows[0]["best_of_n"]["rewards"])) < 1e-4
    # a verdict per completion from the task's own scoring
    task = GSM8K()
    for x, d in zip(rows, docs):
        assert x["best_of_n"]["correct"] == [task.score_text(d, t).metrics["exact_match_numeric"] for t in x["responses"]]

    again = _evalkit(*args, "--output", str(tmp_path / "again"), "--cache-dir", str(cache))
    assert again.returncode == 0, again.stderr
    run2 = json.loads((_run_dir(tmp_path / "again") / "run.json").read_text())
    assert run2["engine"].get("computed", 0) == 0 and run2["reward_model"]["engine"].get("computed", 0) == 0
    assert run2["tasks"]["gsm8k"]["best_of_n"] == bon

    # sharded and merged (answers and rewards from the cache): the same figures and reward model block
    for i in (0, 1):
        r = _evalkit(*args, "--shard", f"{i}/2", "--output", str(tmp_path / "shards"), "--cache-dir", str(cache))
        assert r.returncode == 0, r.stderr
    shards = sorted(str(p) for p in (tmp_path / "shards").iterdir() if (p / "run.json").exists())
    r = _evalkit("merge", *shards, "--output", str(tmp_path / "merged"))
    assert r.returncode == 0, r.stderr
    merged_dir = _run_dir(tmp_path / "merged")
    merged = json.loads((merged_dir / "run.json").read_text())
    mb = merged["tasks"]["gsm8k"]["best_of_n"]
    assert mb["curves"] == bon["curves"] and mb["metrics"] == bon["metrics"] and mb["verifier_metric"] == bon["verifier_metric"]
    assert merged["tasks"]["gsm8k"]["metrics"]["rm_best_of@4"] == run["tasks"]["gsm8k"]["metrics"]["rm_best_of@4"]
    assert merged["reward_model"]["identity_hash"] == rm["identity_hash"]
    mrows = [json.loads(x) for x in (merged_dir / "samples_gsm8k.jsonl").read_text().splitlines()]
    assert [x["best_of_n"] for x in mrows] == [x["best_of_n"] for x in rows]


def test_verdicts_and_votes_from_the_tasks_own_scoring():
    """Per-completion verdicts come from the task's scoring (GSM8K numeric match, MATH math_verify)."""
    from evalkit.run.reward_phase import verdicts
    from evalkit.tasks.gsm8k import GSM8K
    from evalkit.tasks.hendrycks_math import HendrycksMath
    from evalkit.taskapi.task import RunContext
    ctx = RunContext(num_fewshot=0)
    g = GSM8K()
    doc = g.record_to_doc({"question": "2 + 3?", "answer": "2 + 3 = 5\n#### 5"}, 0)
    correct, votes, metric = verdicts(g, [doc], [["so #### 5", "it is 1,005", "The answer is 5.00", "none"]], ctx)
    assert metric == "exact_match_numeric"
    assert correct == [[1.0, 0.0, 1.0, 0.0]] and votes == [["5", "1005", "5", None]]
    m = HendrycksMath()
    mdoc = m.record_to_doc({"problem": "Half of 1?", "solution": r"It is $\boxed{\frac{1}{2}}$.", "type": "Algebra",
                            "level": "Level 1"}, 0)
    correct, votes, metric = verdicts(m, [mdoc], [[r"So $\boxed{0.5}$.", r"$\boxed{\frac12}$", r"$\boxed{2}$"]], ctx)
    assert metric == "math_verify" and correct == [[1.0, 1.0, 0.0]]
    assert votes[0][2] == "2"


def test_merge_refuses_shards_with_another_reward_model_or_step_agg(tmp_path):
    """Shards whose reward model identity or best_of_n.step_agg differ are refused, naming both values
    (the check runs on the records, before any task is rescored)."""
    from evalkit.run.workflows.merge import merge_runs
    from evalkit.records import ModelInfo, TaskEntry, new_run, write_run
    model = ModelInfo(spec="hf:m", name="m", backend="hf", identity_hash="a" * 32)

    def shard(i, rm_hash, agg):
        run = new_run("evaluation", model, {"tasks": ["gsm8k"], "seed": 1, "shard": [i, 2]},
                      {"gsm8k": TaskEntry(best_of_n={"step_agg": agg, "verifier_metric": "exact_match_numeric"})},
                      label=f"s{i}", reward_model={"identity_hash": rm_hash, "step_agg": agg})
        return str(write_run(tmp_path / f"s{i}-{rm_hash}-{agg}", run, {"gsm8k": []}))

    with pytest.raises(ValueError, match="reward model identity_hash rm2 differs from rm1"):
        merge_runs([shard(0, "rm1", "min"), shard(1, "rm2", "min")], tmp_path / "out")
    with pytest.raises(ValueError, match="task gsm8k best_of_n.step_agg last differs from min"):
        merge_runs([shard(0, "rm1", "min"), shard(1, "rm1", "last")], tmp_path / "out")
