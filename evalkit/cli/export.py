"""``evalkit export --format lm-eval RUN --output DIR``: a run record in another harness's layout.

``lm-eval``: ``DIR/<model>/results_<date>.json`` and ``samples_<task>_<date>.jsonl`` as lm-eval
0.4.x writes them (metrics as ``METRIC,FILTER`` with stderr; one sample line per doc and filter),
so tools that read lm-eval's output read evalkit's. ``evalkit import lm-eval DIR`` reads it back.
``inspect``: one Inspect eval log per task in DIR (``--log-format eval|json``), for ``inspect view``;
``evalkit import inspect DIR`` reads it back.
"""
from __future__ import annotations

import argparse


def register(sub):
    p = sub.add_parser("export", help="write a run record in another harness's layout (lm-eval, inspect)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", metavar="RUN", help="run record folder (results/<run-id>)")
    p.add_argument("--format", required=True, choices=["lm-eval", "inspect"], help="target layout")
    p.add_argument("--log-format", choices=["eval", "json"], default="eval",
                   help="inspect: Inspect's log file format (default eval)")
    p.add_argument("--output", required=True, metavar="DIR", help="folder to write into")
    p.add_argument("--tasks", default=None, help="comma-separated subset of the run's tasks")
    p.set_defaults(func=run)


def run(args) -> int:
    from evalkit.lm_eval_io.exporter import export_run
    from evalkit.records import load_run
    rec = load_run(args.run)
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()] if args.tasks else None
    missing = [t for t in tasks or [] if t not in rec.tasks]
    if missing:
        raise ValueError(f"--tasks: the run {rec.path} has no task {', '.join(missing)} (it has {', '.join(rec.tasks)})")
    if args.format == "inspect":  # one Inspect log per task (evalkit.inspect_io)
        from evalkit.cli.inspect_logs import run_export
        return run_export(rec, args, tasks)
    path = export_run(rec, args.output, tasks)
    print(f"wrote {path} (+ {len(tasks or rec.tasks)} samples file(s))")
    return 0
