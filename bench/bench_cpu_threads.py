"""The HF backend beside a second torch process: torch's default threads against evalkit's choice.

torch starts one OpenMP thread per core. Beside another busy torch process (a second evaluation, a
test worker, an engine) those threads spin at every barrier on cores the other process holds. evalkit's
HF backend takes only the cores that are free (affinity, cgroup quota, idle time; ``threads=auto``, the
default); see ``evalkit/backends/cpu_threads.py``. A third setting adds ``OMP_WAIT_POLICY=PASSIVE``
(idle OpenMP threads sleep), which evalkit leaves to the user: these figures are why.

Six runs of the same greedy generation (the bundled model, ``--prompts`` prompts x ``--tokens``
tokens, each in its own subprocess): quiet and beside a second torch process that multiplies matrices
on every core (torch's default threads), each with torch's default (``threads=<cores>``), with
evalkit's default (``threads=auto``), and with ``auto`` and passive waiting. Prints wall and CPU seconds per run, the slowdown beside the neighbour, and checks that
all runs gave the same answers.

    python bench/bench_cpu_threads.py [--prompts 8] [--tokens 48]
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
PROMPTS = ["Write one sentence about the sea.", "What is 17 + 25?", "Name three colours.", "Say hello in French.",
           "What is the capital of Italy?", "Count from one to five.", "Describe a cat.", "Why is the sky blue?"]


def child(a) -> None:
    from evalkit.backends import model_dirs as models
    from evalkit.backends.hf import HFBackend
    from evalkit.taskapi.requests import GenerateRequest, GenParams
    threads = None if a.threads == "auto" else int(a.threads)
    backend = HFBackend(str(models.prepare("smollm2-135m")), dtype="float32", threads=threads)
    reqs = [GenerateRequest(prompt=PROMPTS[i % len(PROMPTS)], params=GenParams(max_tokens=a.tokens, temperature=0.0))
            for i in range(a.prompts)]
    backend.generate(reqs[:1])  # warm-up: load the weights
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    out = backend.generate(reqs)
    r1, t1 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    print(json.dumps({"wall_s": t1 - t0, "cpu_s": (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime),
                      "threads": backend.runtime_info(), "texts": [c[0].text for c in out]}))


def neighbour() -> subprocess.Popen:
    """A second torch process with torch's default threads, multiplying matrices until killed."""
    code = "import torch\nx = torch.randn(512, 512)\nwhile True:\n    x = torch.tanh(x @ x)\n"
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")}
    return subprocess.Popen([sys.executable, "-c", code], env=env)


def side(a, threads: str, policy: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "EVALKIT_TORCH_THREADS", "OMP_NUM_THREADS")}
    env["OMP_WAIT_POLICY"] = "PASSIVE" if policy else ""  # empty: the OpenMP runtime's own default (spin, then sleep)
    cmd = [sys.executable, __file__, "--child", "--threads", threads, "--prompts", str(a.prompts), "--tokens", str(a.tokens)]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True, cwd=str(REPO)).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--threads", default="auto", help=argparse.SUPPRESS)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a)
        return 0
    cores = str(len(os.sched_getaffinity(0)))
    settings = [("torch default", cores, False), ("evalkit auto", "auto", False), ("auto + PASSIVE", "auto", True)]
    rows = {}
    for load in ("quiet", "beside a torch process"):
        other = neighbour() if load != "quiet" else None
        try:
            if other is not None:
                time.sleep(3)  # let it load torch and start spinning
            for name, threads, policy in settings:
                rows[(load, name)] = side(a, threads, policy)
        finally:
            if other is not None:
                other.kill()
                other.wait()
    print(f"{a.prompts} prompts x {a.tokens} greedy tokens, SmolLM2-135M, HF backend, {cores} cores")
    print(f"{'load':<24}{'setting':<16}{'threads':>8}{'wall s':>9}{'CPU s':>9}")
    for (load, name), r in rows.items():
        n = r["threads"].get("cpu_threads", {}).get("threads", "?")
        print(f"{load:<24}{name:<16}{n:>8}{r['wall_s']:>9.1f}{r['cpu_s']:>9.1f}")
    for name, _, _ in settings:
        q, b = rows[("quiet", name)], rows[("beside a torch process", name)]
        print(f"{name}: slowdown beside the neighbour {b['wall_s'] / q['wall_s']:.2f}x wall, "
              f"{b['cpu_s'] / max(q['cpu_s'], 1e-9):.2f}x CPU")
    d, e = rows[("beside a torch process", "torch default")], rows[("beside a torch process", "evalkit auto")]
    print(f"beside the neighbour, evalkit auto vs torch default: {d['wall_s'] / e['wall_s']:.2f}x faster wall, "
          f"{d['cpu_s'] / max(e['cpu_s'], 1e-9):.2f}x less CPU")
    same = len({json.dumps(r["texts"]) for r in rows.values()}) == 1
    print("same answers in all runs:", same)
    return 0 if same else 1


if __name__ == "__main__":
    from results_md import record_run
    sys.exit(record_run("cpu_threads", main, skip_flags=("--child",)))
