"""The HF backend's allocator setting on CPU: 2,048-token windows scored with it and without it.

glibc hands every large allocation a fresh ``mmap`` and returns it on free, so each layer's
activation tensors are page-faulted in again on every forward; evalkit's HF backend raises the
mmap threshold and keeps freed memory in the heap (``evalkit/backends/cpu_malloc.py``). Each side
runs in its own subprocess (``EVALKIT_MALLOC_TUNING=1`` or ``0``), scores the same seeded random
windows with ``score_windows`` after one warm-up batch, and reports tokens/s and peak RSS; the
log-likelihoods must be identical (the setting moves no number).

    python bench/bench_hf_malloc.py [--windows 16] [--length 2048] [--threads 2]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def child(a) -> None:
    import random
    from evalkit.backends import model_dirs as models
    from evalkit.backends.hf import HFBackend
    backend = HFBackend(str(models.prepare("smollm2-135m")), dtype="float32", max_length=a.length, threads=a.threads)
    rng = random.Random(1234)
    windows = [([rng.randrange(100, 40000) for _ in range(a.length - 1)], [rng.randrange(100, 40000)])
               for _ in range(a.windows + 4)]
    backend.score_windows(windows[:4])  # warm-up: load, first allocations
    t = time.perf_counter()
    results = backend.score_windows(windows[4:])
    dt = time.perf_counter() - t
    print(json.dumps({"seconds": dt, "tokens_per_s": a.windows * a.length / dt,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "logliks": [r.logprob for r in results]}))


def side(a, tuned: bool) -> dict:
    env = {**os.environ, "EVALKIT_MALLOC_TUNING": "1" if tuned else "0", "OMP_NUM_THREADS": str(a.threads)}
    cmd = [sys.executable, __file__, "--child", "--windows", str(a.windows), "--length", str(a.length),
           "--threads", str(a.threads)]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--windows", type=int, default=16, help="windows scored per side (after 4 warm-up ones)")
    ap.add_argument("--length", type=int, default=2048, help="tokens per window")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a)
        return 0
    sides = {}
    for name, tuned in (("default glibc", False), ("evalkit tuned", True), ("default glibc again", False)):
        sides[name] = s = side(a, tuned)
        print(f"{name:20s} {s['tokens_per_s']:6.0f} tokens/s ({s['seconds']:.1f} s), peak RSS {s['peak_rss_mb']:.0f} MB")
    base = (sides["default glibc"]["seconds"] + sides["default glibc again"]["seconds"]) / 2
    same = sides["evalkit tuned"]["logliks"] == sides["default glibc"]["logliks"]
    print(f"{a.windows} windows x {a.length} tokens, {a.threads} threads: tuned is x{base / sides['evalkit tuned']['seconds']:.2f} "
          f"the default's speed (mean of the two default runs); log-likelihoods identical: {same}")
    print("PASS" if same else "FAIL")
    return 0 if same else 1


if __name__ == "__main__":
    if "--child" in sys.argv:
        sys.exit(main())
    sys.path.insert(0, str(REPO / "bench"))
    from results_md import record_run
    sys.exit(record_run("hf_malloc", main))
