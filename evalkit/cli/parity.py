"""``evalkit parity``: run the same requests through two backends and report how they differ.

    evalkit parity --model-a hf:smollm2-135m --model-b vllm:smollm2-135m --tasks mmlu,gsm8k --limit 200

Per task: per-request loglikelihood differences, greedy-generation agreement, prediction
agreement with the disagreeing items (and their logprob margins), and every metric's difference.
Exits 1 when predictions agree on fewer than ``--min-agreement`` of the docs of a task or a 0-1
metric differs by more than ``--max-score-diff`` points, so CI can gate on it.
"""
from __future__ import annotations

import json
from pathlib import Path

from evalkit.backends import make_backend, parse_model_args, split_spec
from evalkit.cli.run import add_task_args, build_config, open_cache


def register(sub):
    p = sub.add_parser("parity", help="compare two backends on the same requests (numerics and scores)")
    for side in ("a", "b"):
        p.add_argument(f"--model-{side}", required=True, metavar="BACKEND:MODEL")
        p.add_argument(f"--model-args-{side}", default="", metavar="K=V,...",
                       help=f"backend options of model {side.upper()}")
    add_task_args(p)
    p.add_argument("--cache-dir", default=None, help="response cache folder (default ~/.cache/evalkit)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the response cache")
    p.add_argument("--output", default=None, metavar="FILE.json", help="write the full report as JSON")
    p.add_argument("--max-examples", type=int, default=10, help="differing items listed per task")
    p.add_argument("--min-agreement", type=float, default=0.99, help="fail below this prediction agreement")
    p.add_argument("--max-score-diff", type=float, default=1.0, help="fail above this metric difference (points)")
    p.set_defaults(func=run)


def run(args):
    from evalkit.run.workflows.parity import check, collect, compare, format_report

    for spec in (args.model_a, args.model_b):
        split_spec(spec)
    config = build_config(args)
    cache = open_cache(args)
    collected = []
    try:
        for spec, margs in ((args.model_a, args.model_args_a), (args.model_b, args.model_args_b)):
            backend = make_backend(spec, parse_model_args(margs))  # one at a time: never two models in memory
            try:
                collected.append(collect(backend, config, cache))
            finally:
                backend.close()
    finally:
        cache.close()
    report = compare(*collected, max_examples=args.max_examples)
    report["model_a_spec"], report["model_b_spec"] = args.model_a, args.model_b
    failures = check(report, args.min_agreement, args.max_score_diff)
    report["failures"] = failures
    print(format_report(report))
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(json.dumps(report, indent=2, default=str))
        print(f"\nreport: {args.output}")
    if failures:
        print("\nparity FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("\nparity holds")
    return 0
