"""``evalkit import lm-eval PATH...``: lm-eval 0.4.x results (and samples) as evalkit run records.

Each ``results_*.json`` found (a file, or searched for under a folder) becomes one run record of
kind ``import`` in ``--output``; ``evalkit compare``, ``gate`` and ``leaderboard`` then read it like
any run. Where the lm-eval task is an evalkit task (same name, or ``--task-map``) and evalkit can
read the data (``--data``, else the task's default source), rows take evalkit's doc ids and hashes,
so the run pairs with an evalkit run of that task by doc (compare checks the prompts matched).
"""
from __future__ import annotations

import argparse

from evalkit.cli.import_report import print_imported
from evalkit.cli.run import parse_data_paths


def register(sub):
    p = sub.add_parser("import", help="read another harness's results into run records (lm-eval, inspect)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    fmt = p.add_subparsers(dest="source", metavar="SOURCE")
    fmt.required = True
    q = fmt.add_parser("lm-eval", help="lm-eval 0.4.x results_*.json + samples_*.jsonl (run with --log_samples)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    q.add_argument("paths", nargs="+", metavar="PATH", help="results_*.json files or folders holding them")
    q.add_argument("--output", default="results", help="results folder the run records are written to")
    q.add_argument("--task-map", action="append", default=[], metavar="LM_TASK=EVALKIT_TASK",
                   help="record lm-eval task LM_TASK as evalkit's EVALKIT_TASK (repeatable, comma lists)")
    q.add_argument("--data", action="append", default=[], metavar="TASK=PATH",
                   help="where evalkit reads TASK's data (to give rows evalkit's doc ids and hashes)")
    q.add_argument("--label", default=None, help="run id label (default: the model's name)")
    q.add_argument("--allow-mismatch", action="store_true",
                   help="import figures that contradict their samples (the samples' mean is kept) and docs that "
                        "are not the mapped evalkit task's (recorded under lm-eval's name), with a note each")
    q.set_defaults(func=run)
    from evalkit.cli.inspect_logs import add_import_parser
    add_import_parser(fmt, _task_map)


def _task_map(items) -> dict:
    out = {}
    for item in items:
        for part in str(item).split(","):
            if part.strip():
                if "=" not in part:
                    raise ValueError(f"--task-map {part!r}: expected LM_TASK=EVALKIT_TASK")
                k, v = part.split("=", 1)
                out[k.strip()] = v.strip()
    return out


def run(args) -> int:
    from evalkit.taskapi import registry
    from evalkit.run import validation
    from evalkit.lm_eval_io.files import find_outputs
    from evalkit.lm_eval_io.importer import import_output
    from evalkit.records import write_run
    task_map = _task_map(args.task_map)
    for ek in set(task_map.values()):
        registry.get_task_class(ek)  # an unknown evalkit task fails here, by name
    data = parse_data_paths(args.data)
    validation.check_output_dir(args.output)
    outputs = find_outputs(args.paths)
    for out in outputs:
        run_, rows, notes = import_output(out, task_map, data, args.label, args.allow_mismatch)
        path = write_run(args.output, run_, rows)
        print_imported(out.results_path, path, run_, notes, "lm-eval", "lm_eval")
    return 0
