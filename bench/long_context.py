"""Long prompts through the HF and vLLM backends: prompt tokens/s, wall and CPU time and peak memory per
length, on the bundled SmolLM2-135M (8,192-token context), fp32 on CPU.

For each backend and length, a child process builds one ``niah_grid`` prompt (RULER's needle at 50 %
of the "repeat" haystack, sized with the backend's own tokenizer to the length minus 128 tokens),
loads the model, and generates 16 greedy tokens; the parent reads the child's peak RSS and CPU time
from ``os.wait4`` (for vLLM the engine's own worker processes are not in that figure: its peak is a
lower bound). Reported: prompt tokens, wall seconds of the generate call, prompt tokens/s (prefill
plus 16 decode steps), CPU seconds of the whole child, peak RSS (GB) and whether the model found the
needle.

    python bench/long_context.py [--lengths 1024+2048+4096+8192] [--backends hf+vllm] [--threads 1]

32k to 128k tokens (``--model long-tiny --lengths 32768+65536+131072``): the bundled model has an
8,192-token context, and its 30 layers would need about two hours of CPU for one 128k prompt here. So
the long lengths run models of the same family made for the purpose: the bundled tokenizer and a
Llama of 2 layers, 128 wide (4 heads of 32, 2 key/value heads), a 131,072-token context and seeded
random weights, its MLP 512 wide (``long-tiny``) or 16,384 wide (``wide-tiny``, an 8B model's MLP
width, where one pass over a long prompt holds gigabytes of MLP activations). What they measure is the
harness's and engine's memory and speed at that length (the attention over 128k positions, the key/value
cache, the prompt's activations); their answers mean nothing, so the needle column says ``n/a``.
``--prefill-chunk`` sets the HF backend's ``prefill_chunk`` (``auto``, the default: chunks only for a
wide MLP; 0: one pass; N: N-token chunks) to show what chunking costs and saves.
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


def child(args) -> int:
    import random
    import resource

    from evalkit.tasks.ruler import grid

    from evalkit.backends.model_dirs import prepare
    from evalkit.taskapi.requests import GenerateRequest, GenParams

    model_dir = str(prepare("smollm2-135m")) if args.model == "smollm2-135m" else made_model_dir(prepare, args.model)
    if args.child == "hf":
        from evalkit.backends.hf import HFBackend
        backend = HFBackend(model_dir, threads=args.threads, prefill_chunk=args.prefill_chunk)
    else:
        from evalkit.backends.vllm import VLLMBackend
        backend = VLLMBackend(model_dir, dtype="float32", progress=False)
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(model_dir)
    count = lambda t: len(tok(t, add_special_tokens=False).input_ids)
    units = [s.strip() + "." for s in grid.niah.REPEAT.split(".") if s.strip()]
    s = grid.build(count, lambda n: [units[i % len(units)] for i in range(n)], length=args.length, depth=50,
                   rng=random.Random(0))
    prompt = s["input"] + " " + s["gen_prefix"]
    request = GenerateRequest(prompt=prompt, params=GenParams(max_tokens=16, temperature=0.0))
    backend.generate([GenerateRequest(prompt="Hello", params=GenParams(max_tokens=1, temperature=0.0))])  # load
    loaded_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    text = backend.generate([request])[0][0].text
    seconds = time.perf_counter() - t0
    print("RESULT " + json.dumps({"tokens": count(prompt), "seconds": seconds, "loaded_kb": loaded_kb,
                      "found": s["outputs"][0] in text}), flush=True)
    return 0


#: the made-for-the-purpose models: name -> MLP width
MADE = {"long-tiny": 512, "wide-tiny": 16384}


def made_model_dir(prepare, name: str) -> str:
    """``long-tiny`` or ``wide-tiny`` (see the module's docstring), made once under ~/.cache/evalkit."""
    import shutil

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    out = Path(os.path.expanduser(f"~/.cache/evalkit/bench-{name}-131k"))
    if (out / "config.json").exists():
        return str(out)
    bundled = prepare("smollm2-135m")
    cfg = LlamaConfig(vocab_size=49152, hidden_size=128, intermediate_size=MADE[name], num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=131072,
                      rope_theta=1e6, tie_word_embeddings=True, bos_token_id=1, eos_token_id=2)
    torch.manual_seed(0)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    LlamaForCausalLM(cfg).save_pretrained(tmp)
    for f in bundled.iterdir():
        if f.name.startswith(("tokenizer", "special_tokens")) or f.name in ("vocab.json", "merges.txt"):
            shutil.copy(f, tmp / f.name)
    tmp.rename(out)
    return str(out)


def run_one(backend: str, length: int, args) -> dict:
    cmd = [sys.executable, __file__, "--child", backend, "--length", str(length), "--threads", str(args.threads),
           "--model", args.model, "--prefill-chunk", str(args.prefill_chunk)]
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS=str(args.threads), TOKENIZERS_PARALLELISM="false")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"{backend} at {length} failed (status {status})")
    res = json.loads(next(x for x in reversed(out.splitlines()) if x.startswith("RESULT "))[7:])
    res.update(peak_gb=usage.ru_maxrss * 1024 / 1e9, loaded_gb=res["loaded_kb"] * 1024 / 1e9,
               cpu_s=usage.ru_utime + usage.ru_stime)
    return res


def needle(r: dict, args) -> str:
    return "n/a" if args.model in MADE else "found" if r["found"] else "missed"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lengths", default="1024+2048+4096+8192")
    ap.add_argument("--backends", default="hf+vllm")
    ap.add_argument("--threads", type=int, default=int(os.environ.get("BENCH_THREADS", "1")))
    ap.add_argument("--model", choices=("smollm2-135m", *MADE), default="smollm2-135m")
    ap.add_argument("--prefill-chunk", default="auto", help="the HF backend's prefill_chunk (auto, 0: off, N)")
    ap.add_argument("--child", choices=("hf", "vllm"), help=argparse.SUPPRESS)
    ap.add_argument("--length", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    what = "bundled SmolLM2-135M" if args.model == "smollm2-135m" else \
        f"{args.model} (2 layers x 128, MLP {MADE[args.model]:,} wide, 131,072-token context, random weights)"
    print(f"{what} fp32 on CPU, {args.threads} thread(s); one niah_grid prompt per length "
          f"(needle at 50 %), 16 greedy tokens; each in its own process; HF prefill_chunk {args.prefill_chunk}")
    print("backend  length  prompt tokens  generate s  prompt tok/s  child CPU s  peak RSS GB (loaded)  needle")
    for backend in args.backends.split("+"):
        for length in sorted(int(x) for x in args.lengths.split("+")):
            r = run_one(backend, length, args)
            print(f"{backend:7s} {length:7d} {r['tokens']:14d} {r['seconds']:11.2f} {r['tokens'] / r['seconds']:13.0f} "
                  f"{r['cpu_s']:12.1f} {r['peak_gb']:12.2f} ({r['loaded_gb']:.2f}) {needle(r, args):>7s}")
    return 0


if __name__ == "__main__":
    if "--child" in sys.argv:
        sys.path.insert(0, str(REPO))
        sys.exit(main())
    from results_md import record_run
    backends = sys.argv[sys.argv.index("--backends") + 1] if "--backends" in sys.argv else "hf+vllm"
    model = sys.argv[sys.argv.index("--model") + 1] if "--model" in sys.argv else ""
    section = f"long_context-{backends}" + (f"-{model}" if model in MADE else "") + \
        ("-chunk" + sys.argv[sys.argv.index("--prefill-chunk") + 1] if "--prefill-chunk" in sys.argv else "")
    sys.exit(record_run(section, main))  # a section per backend set, model and chunk size
