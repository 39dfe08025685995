"""evalkit end to end against the bare vLLM engine on exactly the requests evalkit builds.

The bar for an evaluation harness is the engine itself: how much longer does `evalkit run` take
than a script that starts `vllm.LLM` and calls `generate` once on the same prompts with the same
sampling parameters? This bench builds the requests of a run with evalkit's own planner (no
model), hands them to a bare script (one `LLM(...)`, one `generate` call for the generation
requests, one for the loglikelihood ones: a 1-token pass per distinct context with the choice
tokens' logprobs, the cheapest exact way), then runs `evalkit run` on a fresh cache. Both are
separate processes timed from start to exit, so each pays the interpreter, imports and the engine
start once; both get the same engine arguments and every core (VLLM_CPU_NUM_OF_RESERVED_CPU=0).
It prints both wall times, their ratio (goal <= 1.1x) and how many generations are identical.

    python bench/bench_vllm_engine.py [--mixed] [--limit 40] [--max-tokens 256]

``--mixed`` runs GSM8K, MATH-500, HumanEval and MMLU (3 subjects) in one run (default: GSM8K)
and times lm-eval's ``vllm`` model on the same suite too (one ``lm_eval`` process, the same items
through local task YAMLs, the same engine arguments and cores; ``bench/lm_eval_mixed.py`` says where
its configs differ), reporting lm-eval / evalkit beside evalkit / bare engine, with identical prompts
and generations per generation task and each side's scores. The lm-eval ratio for GSM8K alone is
bench_gsm8k_vllm.py's.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
DATA = REPO.parent / "shared" / "data"
SUITES = {
    "gsm8k": {"tasks": "gsm8k", "data": {"gsm8k": DATA / "gsm8k"}},
    "mixed": {"tasks": "gsm8k,math500,humaneval,mmlu_astronomy,mmlu_marketing,mmlu_college_biology",
              "data": {"gsm8k": DATA / "gsm8k", "math500": DATA / "math" / "MATH-500",
                       "humaneval": DATA / "humaneval", "mmlu_astronomy": DATA / "mmlu",
                       "mmlu_marketing": DATA / "mmlu", "mmlu_college_biology": DATA / "mmlu"}},
}


def run_args(a) -> list[str]:
    suite = SUITES[a.suite]
    args = ["run", "--model", f"vllm:{a.model}", "--model-args", f"dtype=float32,max_model_len={a.max_model_len}",
            "--tasks", suite["tasks"], "--limit", str(a.limit), "--gen-kwargs", f"max_tokens={a.max_tokens}"]
    for task, path in suite["data"].items():
        args += ["--data", f"{task}={path}"]
    return args


def dump_requests(a, path: Path) -> dict:
    """The unique requests of the run, as evalkit's planner builds them (what its engine sends)."""
    from evalkit.cli import build_parser
    from evalkit.cli.run import build_config
    from evalkit.taskapi.requests import GenerateRequest, LoglikelihoodRequest
    from evalkit.run.runner import plan

    p = plan(build_config(build_parser().parse_args(run_args(a))))
    unique = {r.key(): r for r in p.all_requests()}
    gen, ll = [], []
    for key, r in unique.items():
        if isinstance(r, GenerateRequest):
            gen.append({"key": key, "prompt": r.prompt, "max_tokens": r.params.max_tokens,
                        "stop": [s for s in r.params.stop if s], "temperature": r.params.temperature})
        elif isinstance(r, LoglikelihoodRequest):
            ll.append({"context": r.context, "continuation": r.continuation})
        else:
            raise SystemExit(f"this bench covers generate and loglikelihood requests, not {r.kind}")
    path.write_text(json.dumps({"generate": gen, "loglikelihood": ll}))
    return {"generate": len(gen), "loglikelihood": len(ll)}


def bare(a) -> int:
    """The bare engine: one LLM, one generate call per request kind (run in its own process)."""
    from vllm import LLM, SamplingParams, TokensPrompt

    reqs = json.loads(Path(a.requests).read_text())
    llm = LLM(model=a.model, dtype="float32", max_model_len=a.max_model_len, enforce_eager=True,
              enable_prefix_caching=True, block_size=32, seed=0)
    gen = reqs["generate"]
    outs = llm.generate([g["prompt"] for g in gen],
                        [SamplingParams(n=1, temperature=0.0, max_tokens=g["max_tokens"], stop=g["stop"] or None,
                                        skip_special_tokens=True) for g in gen], use_tqdm=False) if gen else []
    if reqs["loglikelihood"]:
        tok = llm.get_tokenizer()
        by_ctx: dict[str, set] = {}
        for r in reqs["loglikelihood"]:
            whole = tok.encode(r["context"] + r["continuation"], add_special_tokens=False)
            ctx = tok.encode(r["context"], add_special_tokens=False)
            by_ctx.setdefault(r["context"], set()).add(whole[len(ctx)])
        contexts = list(by_ctx)
        llm.generate([TokensPrompt(prompt_token_ids=tok.encode(c, add_special_tokens=False)) for c in contexts],
                     [SamplingParams(max_tokens=1, temperature=0.0, logprob_token_ids=sorted(by_ctx[c]),
                                     detokenize=False) for c in contexts], use_tqdm=False)
    Path(a.out).write_text(json.dumps({g["key"]: o.outputs[0].text for g, o in zip(gen, outs)}))
    return 0


def timed(cmd: list[str], env: dict, log: Path) -> float:
    t = time.time()
    with open(log, "w") as f:
        r = subprocess.run(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, cwd=str(REPO))
    if r.returncode:
        sys.stderr.write(log.read_text()[-4000:])
        raise SystemExit(f"command failed ({r.returncode}); log: {log}")
    return time.time() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mixed", action="store_true", help="GSM8K, MATH-500, HumanEval and 3 MMLU subjects in one run")
    ap.add_argument("--limit", type=int, default=40, help="items per task")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--max-model-len", type=int, default=2048)
    ap.add_argument("--repeats", type=int, default=2, help="alternating runs of each side (the fastest counts)")
    ap.add_argument("--kv-cache-gib", default="2", help="VLLM_CPU_KVCACHE_SPACE for both (CPU build)")
    ap.add_argument("--model", default=None, help="HF model dir (default: the bundled smollm2-135m)")
    ap.add_argument("--no-lm-eval", action="store_true", help="--mixed without the lm-eval vllm side")
    ap.add_argument("--bare", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--requests", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args()
    a.suite = "mixed" if a.mixed else "gsm8k"
    if a.model is None:
        from evalkit.backends import model_dirs as models
        a.model = str(models.prepare("smollm2-135m"))
    if a.bare:
        return bare(a)
    tmp = Path(tempfile.mkdtemp(prefix="evalkit-vllm-engine-"))
    counts = dump_requests(a, tmp / "requests.json")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": a.kv_cache_gib,
           "VLLM_CPU_NUM_OF_RESERVED_CPU": "0", "PYTHONPATH": str(REPO)}
    print(f"suite {a.suite}: {counts['generate']} generation and {counts['loglikelihood']} loglikelihood requests "
          f"(unique), {a.limit} items per task, max_tokens {a.max_tokens}", flush=True)
    peer = a.suite == "mixed" and not a.no_lm_eval
    if peer:
        from lm_eval_mixed import write_mixed
        (tmp / "lm_tasks").mkdir()
        lm_tasks = write_mixed(tmp / "lm_tasks", DATA, a.limit)
        lm_cmd = [sys.executable, str(BENCH / "bench_gsm8k_vllm.py"), "--lm-eval-cli", "--model", "vllm",
                  "--model_args", f"pretrained={a.model},dtype=float32,max_model_len={a.max_model_len},"
                  "enforce_eager=True,enable_prefix_caching=True,block_size=32,seed=0",
                  "--tasks", lm_tasks, "--include_path", str(tmp / "lm_tasks"), "--limit", str(a.limit),
                  "--batch_size", "auto", "--gen_kwargs", f"max_gen_toks={a.max_tokens}",
                  "--output_path", str(tmp / "lm"), "--log_samples", "--confirm_run_unsafe_code"]
    bares, ours, peers = [], [], []
    for rep in range(a.repeats):     # alternated, fastest of each kept: a shared machine's load drifts
        bares.append(timed([sys.executable, __file__, "--bare", "--model", a.model, "--max-model-len",
                            str(a.max_model_len), "--requests", str(tmp / "requests.json"), "--out", str(tmp / "bare.json")],
                           env, tmp / "bare.log"))
        print(f"  bare vLLM engine   {bares[-1]:7.1f} s", flush=True)
        for old in ("ek", "cache"):
            shutil.rmtree(tmp / old, ignore_errors=True)
        ours.append(timed([sys.executable, "-m", "evalkit", *run_args(a), "--output", str(tmp / "ek"),
                           "--cache-dir", str(tmp / "cache")], env, tmp / "ek.log"))
        print(f"  evalkit end to end {ours[-1]:7.1f} s", flush=True)
        if peer:
            shutil.rmtree(tmp / "lm", ignore_errors=True)
            peers.append(timed(lm_cmd, {**env, "HF_DATASETS_OFFLINE": "1", "HF_ALLOW_CODE_EVAL": "1"},
                               tmp / "lm.log"))
            print(f"  lm-eval vllm       {peers[-1]:7.1f} s", flush=True)
    t_bare, t_ours = min(bares), min(ours)

    from evalkit.run.cache import ResponseCache
    from evalkit.records import iter_runs
    (rec,) = list(iter_runs(tmp / "ek"))
    cache = ResponseCache(tmp / "cache" / "responses.sqlite")
    want = json.loads((tmp / "bare.json").read_text())
    got = cache.get_many(rec.run.model.identity_hash, "generate", list(want))
    same = sum(1 for k, text in want.items() if k in got and got[k][0].text == text)
    ratio = t_ours / t_bare
    report = {"suite": a.suite, "limit": a.limit, "max_tokens": a.max_tokens, "requests": counts,
              "bare_s": round(t_bare, 2), "evalkit_s": round(t_ours, 2), "all_bare_s": bares, "all_evalkit_s": ours, "ratio": round(ratio, 3),
              "identical_generations": same, "generations": len(want), "timings": rec.data.get("timings"),
              "load_avg_1m": os.getloadavg()[0], "pass": ratio <= 1.1 and same == len(want)}
    if peer:
        from lm_eval_mixed import lm_eval_scores, same_items
        report.update(lm_eval_s=round(min(peers), 2), all_lm_eval_s=peers,
                      lm_eval_over_evalkit=round(min(peers) / t_ours, 3),
                      lm_eval_scores=lm_eval_scores(tmp / "lm"), versus_lm_eval=same_items(tmp / "lm", rec.path),
                      evalkit_scores={t: {k: m["value"] for k, m in e["metrics"].items()}
                                      for t, e in rec.data["tasks"].items()})
    out = BENCH / "out"
    out.mkdir(exist_ok=True)
    (out / f"vllm_engine_{a.suite}.json").write_text(json.dumps(report, indent=2))
    print(f"  ratio evalkit / bare engine {ratio:.3f}x (goal <= 1.1x); identical generations {same}/{len(want)}")
    print(f"  evalkit phases: {rec.data.get('timings')}")
    if peer:
        print(f"  lm-eval vllm / evalkit {report['lm_eval_over_evalkit']:.3f}x ({min(peers):.1f} s vs {t_ours:.1f} s, "
              f"same engine arguments and cores, one engine start each)")
        for task, v in report["versus_lm_eval"].items():
            print(f"    {task:<10} identical prompts {v['identical_prompts']}/{v['items']}, "
                  f"generations {v['identical_generations']}/{v['items']}")
        print(f"  scores evalkit: {report['evalkit_scores']}")
        print(f"  scores lm-eval: {report['lm_eval_scores']}")
    print("PASS" if report["pass"] else "FAIL")
    return 0 if report["pass"] else 1


if __name__ == "__main__":
    from results_md import record_run
    sys.exit(record_run("vllm_engine", main, skip_flags=("--bare",), variant_flags=("--mixed",)))
