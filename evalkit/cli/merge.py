"""``evalkit merge SHARD_RUN...``: join ``--shard i/N`` run records into one run record."""
from __future__ import annotations

from evalkit.run.workflows.merge import merge_runs


def register(sub):
    p = sub.add_parser("merge", help="join shard run records into one")
    p.add_argument("runs", nargs="+", help="shard run folders (results/<run-id>)")
    p.add_argument("--output", default="results", help="results folder for the merged record")
    p.set_defaults(func=run)


def run(args):
    run = merge_runs(args.runs, args.output)
    print(f"merged {len(args.runs)} shards into {run.path}")
    return 0
