"""Sharded runs merged, and Ray data parallelism, give the single-engine run's record."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import evalkit_cli

from evalkit.backends.data_parallel import deal_shards
from evalkit.taskapi.requests import GenerateRequest, LoglikelihoodRequest
from evalkit.run.runner import select_docs, shard_of
from tests.conftest import shared

pytestmark = pytest.mark.slow

VOLATILE = ("run_id", "created_at", "timings", "engine", "backend_stats", "merged_from", "config", "git_sha", "model")


def evalkit(*args):
    r = evalkit_cli(*args, timeout=900)
    assert r.returncode == 0, r.stderr
    return r


def run_dir(results: Path) -> Path:
    [d] = [p for p in results.iterdir() if (p / "run.json").exists()]
    return d


def comparable(d: Path, parsed: bool = False):
    run = json.loads((d / "run.json").read_text())
    samples = {t: (d / f"samples_{t}.jsonl").read_text() for t in run["tasks"]}
    if parsed:
        samples = {t: [json.loads(x) for x in text.splitlines()] for t, text in samples.items()}
    return {k: v for k, v in run.items() if k not in VOLATILE}, samples


def same_up_to_float_noise(a, b, rel: float = 1e-5) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=rel)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_up_to_float_noise(a[k], b[k], rel) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_up_to_float_noise(x, y, rel) for x, y in zip(a, b))
    return a == b


@pytest.fixture(scope="module")
def common_args(tiny_model_dir, tmp_path_factory):
    wiki = tmp_path_factory.mktemp("wiki")
    (wiki / "wiki.test.raw").write_text(" \n = A = \n \n Apples are red . \n \n = B = \n \n Bananas are yellow @-@ ish . \n"
                                        " \n = C = \n \n Cherries are small . \n")
    return ["--model", f"hf:{tiny_model_dir}", "--tasks", "gsm8k,wikitext", "--limit", "5",
            "--data", f"gsm8k={shared('gsm8k')}", "--data", f"wikitext={wiki}", "--gen-kwargs", "max_tokens=8"]


@pytest.fixture(scope="module")
def single_run(common_args, tmp_path_factory):
    out = tmp_path_factory.mktemp("single")
    evalkit("run", *common_args, "--output", str(out / "res"), "--cache-dir", str(out / "cache"))
    return run_dir(out / "res")


def test_shards_partition_docs_deterministically():
    class D:
        def __init__(self, i):
            self.id = str(i)
    docs = [D(i) for i in range(50)]
    parts = [select_docs(docs, 40, (i, 3)) for i in range(3)]
    assert sorted(k for p in parts for k, _ in p) == list(range(40))
    assert all(shard_of(d.id, 3) == i for i, p in enumerate(parts) for _, d in p)


def test_shard_then_merge_equals_single_run(single_run, common_args, tmp_path):
    shard_dirs = []
    for i in range(2):
        out = tmp_path / f"s{i}"
        evalkit("run", *common_args, "--shard", f"{i}/2", "--output", str(out), "--cache-dir", str(tmp_path / "cache"))
        shard_dirs.append(run_dir(out))
    evalkit("merge", *map(str, shard_dirs), "--output", str(tmp_path / "merged"))
    merged = run_dir(tmp_path / "merged")
    assert comparable(merged) == comparable(single_run)
    run = json.loads((merged / "run.json").read_text())
    assert run["config"]["shard"] is None and len(run["merged_from"]) == 2


def test_merge_refuses_incomplete_shards(single_run, common_args, tmp_path):
    evalkit("run", *common_args, "--shard", "0/2", "--output", str(tmp_path / "s0"), "--cache-dir", str(tmp_path / "c"))
    r = subprocess.run([sys.executable, "-m", "evalkit", "merge", str(run_dir(tmp_path / "s0"))],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "do not cover 0..1" in r.stderr


def test_deal_shards_keeps_choices_together_and_balances():
    reqs = [LoglikelihoodRequest(f"q{i // 4}", f" {c}") for i, c in enumerate("ABCD" * 6)]
    reqs += [GenerateRequest(prompt=f"p{i}") for i in range(5)]
    shards = deal_shards(reqs, 2)
    assert sorted(i for s in shards for i in s) == list(range(len(reqs)))
    for s in shards:
        ctxs = {reqs[i].context for i in s if isinstance(reqs[i], LoglikelihoodRequest)}
        for c in ctxs:  # every choice of a question lands on the same engine
            assert sum(1 for i in s if getattr(reqs[i], "context", None) == c) == 4
    assert abs(len(shards[0]) - len(shards[1])) <= 4
    # each shard streams back in pieces of ~piece_size (choices of a question never split)
    from evalkit.backends.data_parallel import DataParallelBackend
    dp = DataParallelBackend.__new__(DataParallelBackend)
    dp.size, dp.piece_size = 2, 3
    pieces = dp._pieces(reqs)
    assert sorted(i for _, p in pieces for i in p) == list(range(len(reqs))) and len(pieces) >= 6
    for k, p in pieces:
        assert set(p) <= set(shards[k])
        for i in p:
            if isinstance(reqs[i], LoglikelihoodRequest):
                assert sum(1 for j in p if getattr(reqs[j], "context", None) == reqs[i].context) == 4


def test_ray_data_parallel_equals_single_run_and_survives_a_dead_actor(single_run, common_args, tmp_path):
    ray = pytest.importorskip("ray")
    from evalkit.backends import make_backend
    from evalkit.run.cache import ResponseCache
    from evalkit.cli.run import build_config
    from evalkit.cli import build_parser
    from evalkit.run.runner import evaluate

    args = build_parser().parse_args(["run", *common_args])
    config = build_config(args)
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True, log_to_driver=False)
    try:
        backend = make_backend(args.model, {"data_parallel_size": 2, "threads": 1, "cpus_per_engine": 1})
        assert backend.size == 2
        ray.kill(backend.actors[1])  # an engine dies before the run: its shard is retried elsewhere
        cache = ResponseCache(tmp_path / "cache" / "responses.sqlite")
        out = evaluate(backend, config, cache, str(tmp_path / "res"), model_spec=args.model,
                       model_args={"data_parallel_size": 2})
        assert backend.restarts >= 1
        backend.close()
    finally:
        ray.shutdown()
    got = comparable(Path(out.path), parsed=True)
    want = comparable(single_run, parsed=True)
    # every doc, prompt, response and figure of the single-engine record; floats to 1e-5 relative: a
    # shard retried on the surviving actor scores its wikitext windows in another fp32 batch than the
    # single engine did (seen: -55.474135 vs -55.474155), which the exact shard/merge test above excludes
    assert same_up_to_float_noise(got, want)
