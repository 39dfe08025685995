"""Harness overhead and rerun-from-cache, measured in one process tree.

1. Overhead: every response is already cached, so a run is pure harness (dedupe, cache lookups,
   prompt building, scoring, statistics, record writing). GSM8K's full test (1,319 items,
   exact-match scoring) is answered once by a canned backend, then rerun from the cache; we print
   items/s of the rerun (goal >= 5,000 items/s).
2. Rerun from cache on the real tiny model, per backend (hf, vllm): a first `evalkit run` of N
   GSM8K items, then the same command again; the rerun must take < 5% of the first run's time
   (process start and model load included in both; a fully cached rerun loads no weights and
   starts no engine).

    python bench/bench_harness.py [--items 1319] [--model-items 10] [--backends hf,vllm]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"


def overhead(items: int, tmp: Path) -> dict:
    from evalkit.backends.base import Backend
    from evalkit.run.cache import ResponseCache
    from evalkit.taskapi.requests import Completion
    from evalkit.run.runner import RunConfig, evaluate, load_tasks

    class Canned(Backend):
        name = "canned"
        chunk_size = 4096

        def identity(self):
            return {"backend": "canned", "model": "answers-42"}

        def loglikelihood(self, requests):
            raise NotImplementedError

        def loglikelihood_rolling(self, requests):
            raise NotImplementedError

        def generate(self, requests):
            return [[Completion(" Some steps ... so 6 * 7 = 42.\n#### 42", "stop")] for _ in requests]

    config = RunConfig(tasks=["gsm8k"], limit=items, data_paths={"gsm8k": str(DATA / "gsm8k")})
    cache = ResponseCache(tmp / "overhead.sqlite")
    evaluate(Canned(), config, cache, str(tmp / "warm"), progress=False)  # fills the cache
    t = time.perf_counter()
    tasks = load_tasks(config)
    out = evaluate(Canned(), config, cache, str(tmp / "rerun"), progress=False, task_runs=tasks)
    dt = time.perf_counter() - t
    n = out.to_dict()["tasks"]["gsm8k"]["n_docs"]
    assert out.to_dict()["engine"].get("computed", 0) == 0
    return {"items": n, "seconds": dt, "items_per_s": n / dt, "pass": n / dt >= 5000}


def rerun_from_cache(model_items: int, tmp: Path, backend: str) -> dict:
    from evalkit.backends import model_dirs as models
    model = f"{backend}:{models.prepare('smollm2-135m')}"
    cmd = [sys.executable, "-m", "evalkit", "run", "--model", model, "--tasks", "gsm8k", "--limit", str(model_items),
           "--data", f"gsm8k={DATA / 'gsm8k'}", "--cache-dir", str(tmp / f"cache-{backend}"),
           "--output", str(tmp / "res")]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    times = []
    for _ in range(2):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return {"backend": backend, "items": model_items, "first_s": times[0], "rerun_s": times[1],
            "ratio": times[1] / times[0], "pass": times[1] / times[0] < 0.05}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=1319)
    ap.add_argument("--model-items", type=int, default=10)
    ap.add_argument("--backends", default="hf,vllm", help="backends for the rerun-from-cache check")
    ap.add_argument("--skip-model", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="evalkit-harness-"))
    report = {"overhead": overhead(args.items, tmp)}
    o = report["overhead"]
    print(f"harness overhead (all cached): {o['items']} gsm8k items in {o['seconds']:.3f}s = {o['items_per_s']:.0f} items/s")
    for backend in ([] if args.skip_model else [b.strip() for b in args.backends.split(",") if b.strip()]):
        report[f"rerun_{backend}"] = r = rerun_from_cache(args.model_items, tmp, backend)
        print(f"rerun from cache ({r['items']} gsm8k items, tiny model, {backend}): first {r['first_s']:.1f}s, "
              f"rerun {r['rerun_s']:.1f}s = {100 * r['ratio']:.1f}% of the first run")
    out = REPO / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "harness.json").write_text(json.dumps(report, indent=2))
    ok = all(v["pass"] for v in report.values())
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    from results_md import record_run
    sys.exit(record_run("harness", main))
