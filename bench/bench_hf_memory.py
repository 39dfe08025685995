"""Peak memory of WikiText-2 perplexity through the HF backend: chunked vs full log-probabilities.

Each side runs in its own subprocess on the bundled model (fp32, CPU, max_length 2048, the default
``batch_size=auto`` token budget, i.e. 4 windows of 2,048 tokens a batch on CPU), scores the same WikiText-2
test documents with ``loglikelihood_rolling`` and reports its peak RSS, read by the parent from the
child's own ``ru_maxrss`` (``os.wait4``), beside its wall time:
  - chunked: the backend as shipped (hidden states kept, only scored positions projected to the
    vocabulary, a chunk at a time);
  - full: the previous path, rebuilt here only: the model's logits for the whole batch
    [B, T, vocab] (and its default key/value cache), then a log-softmax over each window's read
    slice.
Targets: chunked peak <= 2.5 GB, per-document log-likelihoods and word perplexity equal to 1e-5
(relative), chunked no slower than full.

    python bench/bench_hf_memory.py [--docs 4] [--max-length 2048] [--threads 1]
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
DATA = REPO.parent / "shared" / "data" / "wikitext" / "wikitext-2-raw" / "wiki.test.raw"
TARGET_GB = 2.5


def documents(n_docs):
    from evalkit.tasks.wikitext import detokenize, split_pages
    pages = split_pages(DATA.read_text(encoding="utf-8"))
    return [(detokenize(p), len(p.split())) for p in pages[:n_docs]]


def legacy_full_logits(backend) -> None:
    """Make ``backend`` read log-probabilities the old way: full logits, full log-softmax."""
    import types

    import evalkit.backends.hf_scoring as scoring
    from evalkit.backends.logprobs import full_token_logprobs
    torch = backend.torch

    def forward_logits(seqs):  # the previous HFBackend._forward_logits, verbatim
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), backend.tokenizer.pad_token_id or 0, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for j, s in enumerate(seqs):
            ids[j, : len(s)] = torch.tensor(s)
            mask[j, : len(s)] = 1
        with torch.inference_mode():
            return backend.model(input_ids=ids.to(backend.device), attention_mask=mask.to(backend.device)).logits

    backend._split = types.SimpleNamespace(ok=False)  # read from logits [B, T, V]
    backend._forward_logits = forward_logits
    scoring.token_logprobs = lambda states, rows, tokens, head=None, vocab=None, chunk_elems=None: \
        full_token_logprobs(states, rows, tokens)


def child(args) -> int:
    import resource

    from evalkit.backends.hf import HFBackend
    from evalkit.backends.model_dirs import prepare
    from evalkit.taskapi.requests import RollingRequest

    docs = documents(args.docs)
    backend = HFBackend(str(prepare("smollm2-135m")), max_length=args.max_length, threads=args.threads)
    if args.child == "full":
        legacy_full_logits(backend)
    backend.model  # load outside the timed part (both sides equally)
    loaded_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    lls = backend.loglikelihood_rolling([RollingRequest(text) for text, _ in docs])
    seconds = time.perf_counter() - t0
    tokens = sum(len(backend.encode(text)) for text, _ in docs)
    print(json.dumps({"lls": lls, "seconds": seconds, "tokens": tokens, "loaded_kb": loaded_kb,
                      "token_budget": backend.token_budget}))
    return 0


def run_side(side: str, args) -> dict:
    cmd = [sys.executable, __file__, "--child", side, "--docs", str(args.docs), "--max-length", str(args.max_length),
           "--threads", str(args.threads)]
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS=str(args.threads), TOKENIZERS_PARALLELISM="false")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"{side} side failed (status {status})")
    res = json.loads(out.strip().splitlines()[-1])
    res["peak_gb"] = usage.ru_maxrss * 1024 / 1e9  # ru_maxrss is in KiB on Linux
    res["loaded_gb"] = res["loaded_kb"] * 1024 / 1e9
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=4, help="first N of the 62 WikiText-2 test documents")
    ap.add_argument("--max-length", type=int, default=2048)
    ap.add_argument("--threads", type=int, default=int(os.environ.get("BENCH_THREADS", "1")))
    ap.add_argument("--child", choices=("chunked", "full"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    import math
    sys.path.insert(0, str(REPO))
    words = sum(w for _, w in documents(args.docs))
    print(f"WikiText-2 test, first {args.docs} of 62 documents, bundled SmolLM2-135M fp32 on CPU, "
          f"{args.max_length}-token windows, batch_size=auto, {args.threads} thread(s)")
    sides = {}
    for side in ("full", "chunked"):
        r = sides[side] = run_side(side, args)
        wp = math.exp(-sum(r["lls"]) / words)
        r["word_perplexity"] = wp
        print(f"  {side:8s} peak RSS {r['peak_gb']:.2f} GB (after model load {r['loaded_gb']:.2f} GB)  "
              f"{r['seconds']:.1f} s for {r['tokens']} tokens (token budget {r['token_budget']}/batch)  "
              f"word perplexity {wp:.6f}")
    full, chunk = sides["full"], sides["chunked"]
    doc_rel = max(abs(a - b) / max(1.0, abs(b)) for a, b in zip(chunk["lls"], full["lls"]))
    wp_rel = abs(chunk["word_perplexity"] - full["word_perplexity"]) / full["word_perplexity"]
    speed = full["seconds"] / chunk["seconds"]
    print(f"peak RSS: chunked {chunk['peak_gb']:.2f} GB vs full {full['peak_gb']:.2f} GB "
          f"({full['peak_gb'] / chunk['peak_gb']:.1f}x less; target <= {TARGET_GB} GB)")
    print(f"largest per-document log-likelihood relative difference {doc_rel:.1e}; word perplexity {wp_rel:.1e} "
          f"(target <= 1e-5)")
    print(f"speed: chunked {speed:.2f}x the full path (target >= 1, i.e. no slower; within noise counts)")
    ok = chunk["peak_gb"] <= TARGET_GB and doc_rel <= 1e-5 and wp_rel <= 1e-5 and speed >= 0.95
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    if "--child" in sys.argv:
        sys.path.insert(0, str(REPO))
        sys.exit(main())
    from results_md import record_run
    sys.exit(record_run("hf_memory", main))
