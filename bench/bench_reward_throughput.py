"""Benchmark: reward-model pairs/s through vLLM offline pooling against transformers, same pairs.

Pairs are (GSM8K question, its reference solution) from the shared test split, each scored by the
deterministic reward-model fixture (SmolLM2-135M + yes/no head, ``tests/fixtures/reward_model.py``; its
rewards are noise, it measures plumbing speed and numerics, not reward-model quality). Both sides
get the same token ids (``RewardBackend.request_ids``); each side runs in its own process, only the
scoring call is timed (model load / engine start reported apart), after a small untimed warm-up.
The driver prints pairs/s of both, the ratio, and the largest |reward difference| between them.

    python bench/bench_reward_throughput.py --n 256 [--hf-batch 8] [--dtype float32]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GSM8K = REPO.parent / "shared" / "data" / "gsm8k" / "test.jsonl"


def pairs(n: int) -> list[tuple[str, str]]:
    out = []
    with open(GSM8K, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            out.append((r["question"], r["answer"]))
            if len(out) == n:
                break
    return out


def side_main(args) -> None:
    sys.path.insert(0, str(REPO))
    from tests.fixtures.reward_model import build
    from evalkit.taskapi.requests import RewardRequest
    path = str(build())
    t0 = time.perf_counter()
    if args.side == "vllm":
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
        from evalkit.backends.reward_vllm import VLLMRewardBackend
        b = VLLMRewardBackend(path, dtype=args.dtype)
        _ = b.llm
    else:
        from evalkit.backends.reward_hf import HFRewardBackend
        b = HFRewardBackend(path, dtype=args.dtype, batch_size=args.hf_batch, threads=args.hf_threads)
        _ = b.model
    load_s = time.perf_counter() - t0
    reqs = [RewardRequest.pair(q, a) for q, a in pairs(args.n + args.warmup)]
    b.reward(reqs[args.n:])  # warm-up (other pairs)
    t0 = time.perf_counter()
    rewards = b.reward(reqs[:args.n])
    secs = time.perf_counter() - t0
    toks = sum(len(b.request_ids(r)[0]) for r in reqs[:args.n])
    Path(args.out).write_text(json.dumps({"load_s": load_s, "secs": secs, "rewards": rewards, "tokens": toks}))
    b.close()


def driver(args) -> int:
    res = {}
    for side in ("hf", "vllm"):
        out = Path(f"/tmp/bench_reward_{side}_{os.getpid()}.json")
        cmd = [sys.executable, __file__, "--side", side, "--out", str(out), "--n", str(args.n),
               "--warmup", str(args.warmup), "--dtype", args.dtype, "--hf-batch", str(args.hf_batch),
               "--hf-threads", str(args.hf_threads)]
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL if not args.verbose else None,
                           stderr=subprocess.DEVNULL if not args.verbose else None)
        if r.returncode:
            print(f"{side} side failed (exit {r.returncode}); rerun with --verbose")
            return 1
        res[side] = json.loads(out.read_text())
        out.unlink()
    hf, v = res["hf"], res["vllm"]
    diff = max(abs(a - b) for a, b in zip(hf["rewards"], v["rewards"]))
    print(f"{args.n} (question, solution) pairs, {hf['tokens']} tokens, fixture reward model, {args.dtype}, "
          f"{os.cpu_count()} cores (hf: {args.hf_threads} torch thread(s))")
    for name, r in (("transformers (hf)", hf), ("vLLM offline pooling", v)):
        print(f"  {name:22s} {args.n / r['secs']:8.1f} pairs/s  {r['tokens'] / r['secs']:9.0f} tok/s  "
              f"({r['secs']:.1f} s; load/start {r['load_s']:.1f} s)")
    print(f"  vLLM / hf throughput ratio: {hf['secs'] / v['secs']:.2f}x")
    print(f"  max |reward(vLLM) - reward(hf)| over the pairs: {diff:.2e}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=256, help="timed pairs")
    p.add_argument("--warmup", type=int, default=8, help="untimed warm-up pairs")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--hf-batch", type=int, default=8, help="transformers rows per forward pass")
    p.add_argument("--hf-threads", type=int, default=int(os.environ.get("EVALKIT_TORCH_THREADS", "1")),
                   help="torch threads of the transformers side (default 1: 2 threads collapse on a loaded 2-core box)")
    p.add_argument("--side", choices=("hf", "vllm"), help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    p.add_argument("--verbose", action="store_true", help="show the engines' logs")
    args = p.parse_args(argv)
    if args.side:
        side_main(args)
        return 0
    return driver(args)


if __name__ == "__main__":
    from results_md import record_run
    sys.exit(record_run("reward_throughput", main, skip_flags=("--side",)))
