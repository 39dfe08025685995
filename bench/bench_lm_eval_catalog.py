"""lm-eval's own tasks run by evalkit (``--tasks lm-eval:NAME``) against their peers, same items.

1. Multiple choice, ``mmlu_<subject>`` (lm-eval's config, 5-shot from dev, four one-token choices
   per question): evalkit's HF backend vs lm-eval's ``hf`` model (``simple_evaluate``), same model
   (float32), same threads, same items from local files in the hub layout. Goal: >= 3x lm-eval's
   speed with identical predictions (argmax choice per doc). evalkit scores the choices that share
   a context from one forward pass; lm-eval runs one sequence per choice.
2. Generation, ``gsm8k`` (lm-eval's config: 5 shots, regex filters): evalkit through the vLLM
   backend vs the bare engine (``LLM.generate`` on the very prompts evalkit built, greedy, the
   same stops and max tokens). Goal: <= 1.1x the bare engine's time: the harness around the engine
   (prompts, dedupe, cache writes, lm-eval's filters and scoring, CIs) costs <= 10%.

Each side runs in its own child process; the timed span excludes imports and model or engine
start-up (reported apart), and CPU time (user+system of the child process) is reported beside wall
time; with vLLM that is the harness's own CPU (the engine core is a process of its own).

    python bench/bench_lm_eval_catalog.py [--mc-limit 100] [--subjects high_school_psychology]
        [--gen-limit 32] [--max-gen-toks 128] [--only mc,gen] [--batch-size 16]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO / "tests"))
DATA = REPO.parent / "shared" / "data"
ENV = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
       "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")])}

CHILD_PRELUDE = """
import json, os, resource, sys, time
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
args = json.loads(sys.argv[1])
"""

EVALKIT_MC = CHILD_PRELUDE + """
from evalkit.backends.hf import HFBackend
from evalkit.run.cache import NullCache
from evalkit.run.config import RunConfig
from evalkit.run.runner import evaluate
t = time.time(); backend = HFBackend(args["model"], dtype="float32", threads=args["threads"]); start = time.time() - t
tasks = ["lm-eval:mmlu_" + s for s in args["subjects"]]
cfg = RunConfig(tasks=tasks, limit=args["limit"], num_fewshot=5, data_paths={t: args["hub"] for t in tasks})
t, c = time.time(), cpu()
run = evaluate(backend, cfg, NullCache(), output_dir=None, progress=False)
wall, cpu_s = time.time() - t, cpu() - c
preds = {}
for task in tasks:
    for row in run.samples[task]:
        lls = [r[0][0] for r in row["responses"]]
        preds[f"{task[8:]}/{row['extra']['lm_eval']['doc_id']}"] = max(range(len(lls)), key=lls.__getitem__)
print("RESULT", json.dumps({"wall": wall, "cpu": cpu_s, "startup": start, "preds": preds}))
"""

LM_EVAL_MC = CHILD_PRELUDE + """
import torch
torch.set_num_threads(args["threads"])
import _lm_eval_replay as R
from lm_eval.evaluator import simple_evaluate
from lm_eval.models.huggingface import HFLM
from lm_eval.tasks import TaskManager
tm = TaskManager()
t = time.time()
lm = HFLM(pretrained=args["model"], dtype="float32", batch_size=args["batch_size"], device="cpu")
start = time.time() - t
objs = [R.lm_eval_task(tm, "mmlu_" + s, {"test": f"{args['hub']}/{s}/test.jsonl", "dev": f"{args['hub']}/{s}/dev.jsonl"})
        for s in args["subjects"]]
t, c = time.time(), cpu()
out = simple_evaluate(model=lm, tasks=objs, limit=args["limit"], num_fewshot=5, task_manager=tm,
                      log_samples=True, bootstrap_iters=0)
wall, cpu_s = time.time() - t, cpu() - c
preds = {}
for task, samples in out["samples"].items():
    for s in samples:
        lls = [r[0] for r in s["filtered_resps"]]
        preds[f"{task}/{s['doc_id']}"] = max(range(len(lls)), key=lls.__getitem__)
print("RESULT", json.dumps({"wall": wall, "cpu": cpu_s, "startup": start, "preds": preds}))
"""

EVALKIT_GEN = CHILD_PRELUDE + """
from evalkit.backends.vllm import VLLMBackend
from evalkit.run.cache import NullCache
from evalkit.run.config import RunConfig
from evalkit.run.runner import evaluate
t = time.time(); backend = VLLMBackend(args["model"], **args["engine"]); backend.llm; start = time.time() - t
cfg = RunConfig(tasks=["lm-eval:gsm8k"], limit=args["limit"], data_paths={"lm-eval:gsm8k": args["hub"]},
                gen_overrides={"max_tokens": args["max_tokens"]})
t, c = time.time(), cpu()
run = evaluate(backend, cfg, NullCache(), output_dir=None, progress=False)
wall, cpu_s = time.time() - t, cpu() - c
rows = run.samples["lm-eval:gsm8k"]
json.dump({"prompts": [r["prompt"] for r in rows], "texts": [r["responses"][0][0] for r in rows]},
          open(args["prompts_file"], "w"))
print("RESULT", json.dumps({"wall": wall, "cpu": cpu_s, "startup": start,
                  "strict": run.tasks["lm-eval:gsm8k"].metrics["exact_match,strict-match"]["value"]}))
"""

BARE_GEN = CHILD_PRELUDE + """
from evalkit.backends.vllm import VLLMBackend
from vllm import SamplingParams
t = time.time(); backend = VLLMBackend(args["model"], **args["engine"]); llm = backend.llm; start = time.time() - t
got = json.load(open(args["prompts_file"]))
sp = SamplingParams(temperature=0.0, max_tokens=args["max_tokens"], stop=["Question:", "</s>", "<|im_end|>"])
t, c = time.time(), cpu()
outs = llm.generate(got["prompts"], sp, use_tqdm=False)
wall, cpu_s = time.time() - t, cpu() - c
same = sum(o.outputs[0].text == e for o, e in zip(outs, got["texts"]))
print("RESULT", json.dumps({"wall": wall, "cpu": cpu_s, "startup": start, "identical_texts": same, "n": len(outs)}))
"""


def child(code: str, args: dict) -> dict:
    r = subprocess.run([sys.executable, "-c", code, json.dumps(args)], env=ENV, capture_output=True, text=True)
    if r.returncode:
        sys.stderr.write(r.stderr[-4000:])
        raise SystemExit(f"child failed ({r.returncode})")
    return json.loads(next(x for x in reversed(r.stdout.splitlines()) if x.startswith("RESULT "))[7:])


def line(name: str, r: dict) -> str:
    return f"  {name:<28} {r['wall']:8.1f} s wall {r['cpu']:8.1f} s CPU   (start-up {r['startup']:.1f} s, not timed)"


def bench_mc(a, model: str, tmp: Path) -> bool:
    import _lm_eval_replay as R
    hub = R.mmlu_hub(DATA, tmp / "mmlu", a.subjects)
    common = {"model": model, "subjects": a.subjects, "limit": a.mc_limit, "hub": str(hub), "threads": a.threads}
    ek = child(EVALKIT_MC, common)
    lm = child(LM_EVAL_MC, {**common, "batch_size": a.batch_size})
    same = sum(ek["preds"][k] == lm["preds"].get(k) for k in ek["preds"])
    ratio = lm["wall"] / ek["wall"]
    print(f"MC: lm-eval:mmlu_{{{','.join(a.subjects)}}}, {len(ek['preds'])} questions x 4 choices, 5-shot, "
          f"float32, {a.threads} threads (lm-eval batch size {a.batch_size})")
    print(line("evalkit (hf backend)", ek))
    print(line("lm-eval (hf model)", lm))
    print(f"  speed-up {ratio:.2f}x wall, {lm['cpu'] / ek['cpu']:.2f}x CPU; identical predictions "
          f"{same}/{len(ek['preds'])} (goal >= 3x, all identical)")
    return ratio >= 3 and same == len(ek["preds"])


def bench_gen(a, model: str, tmp: Path) -> bool:
    import _lm_eval_replay as R
    hub = R.gsm8k_hub(DATA, tmp / "gsm8k")
    engine = {"dtype": "float32", "max_model_len": 2048}
    common = {"model": model, "limit": a.gen_limit, "hub": str(hub), "max_tokens": a.max_gen_toks,
              "prompts_file": str(tmp / "prompts.json"), "engine": engine}
    ek = child(EVALKIT_GEN, common)
    bare = child(BARE_GEN, common)
    ratio = ek["wall"] / bare["wall"]
    print(f"Generation: lm-eval:gsm8k, {a.gen_limit} items, 5-shot, greedy, max {a.max_gen_toks} tokens, vLLM float32")
    print(line("evalkit (whole evaluation)", ek))
    print(line("bare vLLM LLM.generate", bare))
    print(f"  evalkit / bare engine = {ratio:.3f}x wall (goal <= 1.1x); identical texts "
          f"{bare['identical_texts']}/{bare['n']}; strict-match {ek['strict']:.3f}")
    return ratio <= 1.1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mc-limit", type=int, default=100)
    ap.add_argument("--subjects", type=lambda s: s.split(","), default=["high_school_psychology"])
    ap.add_argument("--gen-limit", type=int, default=32)
    ap.add_argument("--max-gen-toks", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--only", type=lambda s: s.split(","), default=["mc", "gen"])
    a = ap.parse_args()
    from evalkit.backends import model_dirs
    model = str(model_dirs.prepare("smollm2-135m"))
    ok = True
    with tempfile.TemporaryDirectory() as d:
        if "mc" in a.only:
            ok &= bench_mc(a, model, Path(d))
        if "gen" in a.only:
            ok &= bench_gen(a, model, Path(d))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.path.insert(0, str(BENCH))
    from results_md import record_run
    sys.exit(record_run("lm_eval_catalog", main))
