"""The judge phase against the bare engine: judged requests per second on exactly the same prompts.

A judged benchmark's cost is its judge calls (HealthBench asks one per rubric item, Arena-Hard two per
prompt). This bench builds a judged task's judge requests with evalkit's own planner and judge layer,
for fixed answers (the same canned answer for every doc, so no answer phase is timed), then times in
separate processes, one engine each, the same engine arguments and all cores:

- **bare**: ``vllm.LLM`` and one ``LLM.chat`` call on every judge conversation with the same sampling
  parameters (greedy, the same max_tokens);
- **evalkit**: the judge phase as a run does it (``judge_phase.judge_requests`` then the ``Engine``
  over evalkit's vLLM backend, batched, no cache).

Both time only the judge work (engine start excluded, the same on both sides), print requests per
second, their ratio (goal: evalkit within 1.2x of the bare engine) and how many replies are identical.

    python bench/bench_judge_throughput.py [--task healthbench] [--limit 6] [--max-tokens 96]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
ANSWER = ("I am not a doctor, but based on what you describe you should see a medical professional soon. "
          "If the symptoms get worse, such as trouble breathing or chest pain, call emergency services.")


def judge_plan(a):
    """The run's plan, canned answers for its requests, and the judge requests (capped at --max-tokens)."""
    from evalkit.cli import build_parser
    from evalkit.cli.run import build_config
    from evalkit.run import judge_phase
    from evalkit.run.runner import plan
    from evalkit.taskapi.requests import Completion

    config = build_config(build_parser().parse_args(["run", "--model", "hf:none", "--tasks", a.task, "--limit",
                                                      str(a.limit), "--apply-chat-template"]))
    p = plan(config)
    answers = {r.key(): [Completion(ANSWER, "stop")] for tr in p.task_runs for reqs in tr.requests for r in reqs}
    return p, answers, judge_phase


def capped(requests, max_tokens: int) -> list:
    return [dataclasses.replace(r, params=dataclasses.replace(r.params, max_tokens=max_tokens)) for r in requests]


def engine_args(a) -> dict:
    return {"dtype": "float32", "max_model_len": a.max_model_len}


def side_bare(a) -> int:
    from vllm import LLM, SamplingParams

    p, answers, judge_phase = judge_plan(a)
    reqs = capped(judge_phase.judge_requests(p, answers), a.max_tokens)
    llm = LLM(model=a.model, enforce_eager=True, enable_prefix_caching=True, block_size=32, seed=0,
              **engine_args(a))
    convs = [r.message_dicts() for r in reqs]
    t = time.perf_counter()
    outs = llm.chat(convs, SamplingParams(n=1, temperature=0.0, max_tokens=a.max_tokens, skip_special_tokens=True),
                    use_tqdm=False)
    dt = time.perf_counter() - t
    Path(a.out).write_text(json.dumps({"seconds": dt, "n": len(reqs),
                                       "texts": {r.key(): o.outputs[0].text for r, o in zip(reqs, outs)}}))
    return 0


def side_evalkit(a) -> int:
    from evalkit.backends import make_backend
    from evalkit.run.cache import NullCache
    from evalkit.run.engine import Engine

    backend = make_backend(f"vllm:{a.model}", engine_args(a))
    p, answers, judge_phase = judge_plan(a)
    backend.llm  # noqa: B018 -- the engine starts here, outside the timed part (as the bare side's LLM())
    t = time.perf_counter()
    reqs = capped(judge_phase.judge_requests(p, answers), a.max_tokens)
    got = Engine(backend, NullCache(), progress=False).run(reqs)
    dt = time.perf_counter() - t
    Path(a.out).write_text(json.dumps({"seconds": dt, "n": len(reqs),
                                       "texts": {r.key(): got[r.key()][0].text for r in reqs}}))
    backend.close()
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", default="healthbench", help="a judged task (its judge requests are timed)")
    ap.add_argument("--limit", type=int, default=6, help="docs of the task")
    ap.add_argument("--max-tokens", type=int, default=96, help="the judge's reply length, both sides")
    ap.add_argument("--max-model-len", type=int, default=8192)
    ap.add_argument("--repeats", type=int, default=2, help="alternating runs of each side (the fastest counts)")
    ap.add_argument("--model", default=None, help="HF model dir of the judge (default: the bundled smollm2-135m)")
    ap.add_argument("--side", choices=("bare", "evalkit"), help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.model is None:
        from evalkit.backends import model_dirs as models
        a.model = str(models.prepare("smollm2-135m"))
    if a.side:
        return side_bare(a) if a.side == "bare" else side_evalkit(a)
    tmp = Path(tempfile.mkdtemp(prefix="evalkit-judge-bench-"))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "2",
           "VLLM_CPU_NUM_OF_RESERVED_CPU": "0", "PYTHONPATH": str(REPO)}
    res: dict = {"bare": [], "evalkit": []}
    for _ in range(a.repeats):  # alternated, the fastest of each kept: a shared machine's load drifts
        for side in ("bare", "evalkit"):
            out = tmp / f"{side}.json"
            cmd = [sys.executable, __file__, "--side", side, "--task", a.task, "--limit", str(a.limit), "--max-tokens",
                   str(a.max_tokens), "--max-model-len", str(a.max_model_len), "--model", a.model, "--out", str(out)]
            c0 = os.times()
            r = subprocess.run(cmd, env=env, cwd=str(REPO), capture_output=True, text=True)
            c1 = os.times()
            if r.returncode:
                sys.stderr.write(r.stderr[-4000:])
                raise SystemExit(f"{side} side failed ({r.returncode})")
            got = json.loads(out.read_text())
            got["cpu_s"] = (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)
            res[side].append(got)
            print(f"  {side:<8} {got['n']} judge requests in {got['seconds']:6.1f} s "
                  f"({got['n'] / got['seconds']:.2f}/s); process CPU {got['cpu_s']:.0f} s", flush=True)
    bare = min(res["bare"], key=lambda g: g["seconds"])
    ours = min(res["evalkit"], key=lambda g: g["seconds"])
    same = sum(1 for k, t in bare["texts"].items() if ours["texts"].get(k) == t)
    ratio = ours["seconds"] / bare["seconds"]
    ok = ratio <= 1.2 and bare["n"] == ours["n"]
    print(f"task {a.task}, {a.limit} docs: {bare['n']} judge requests, max_tokens {a.max_tokens}")
    print(f"  bare vLLM engine {bare['n'] / bare['seconds']:.2f} req/s, evalkit judge phase "
          f"{ours['n'] / ours['seconds']:.2f} req/s")
    print(f"  ratio evalkit / bare engine {ratio:.3f}x (goal <= 1.2x); identical replies {same}/{bare['n']}")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    from results_md import record_run
    sys.exit(record_run("judge_throughput", main, skip_flags=("--side",)))
