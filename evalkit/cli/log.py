"""``evalkit log RUN_DIR... --to mlflow|wandb|hub``: send saved run records to a result sink.

The same payload as ``evalkit run --log-to``: metrics with 95% CIs (``task/metric``,
``task/metric.ci_low`` ...), the config and model block, and the samples table per task (the
questions of redacted tasks such as GPQA are never sent). Secrets are scrubbed; nothing from the
environment is logged.

  evalkit log results/<run> --to mlflow --mlflow-uri ./mlruns
  WANDB_MODE=offline evalkit log results/<run> --to wandb --wandb-dir wandb-runs
  evalkit log results/<run> --to hub --repo me/evals --dry-run
"""
from __future__ import annotations

import argparse


def register(sub):
    p = sub.add_parser("log", help="send saved run records to MLflow, W&B or a Hugging Face dataset repo",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run record folders (results/<run-id>)")
    p.add_argument("--to", required=True, choices=("mlflow", "wandb", "hub"), help="the sink")
    p.add_argument("--repo", default=None, metavar="OWNER/NAME", help="dataset repo for --to hub")
    from evalkit.sinks import add_sink_args
    add_sink_args(p, flag="--to")
    p.set_defaults(func=run)


def run(args) -> int:
    from evalkit.records import load_run
    from evalkit.sinks import describe, log_run
    if args.to == "hub" and not args.repo:
        raise ValueError("--to hub needs --repo OWNER/NAME")
    paths = [load_run(r).path for r in args.runs]       # every folder checked before anything is sent
    for path in paths:
        print(describe(log_run(path, args.to, args, args.repo)))
    return 0
