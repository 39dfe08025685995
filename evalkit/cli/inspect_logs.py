"""``evalkit import inspect LOG_OR_FOLDER...`` and ``evalkit export --format inspect``: Inspect eval
logs in and out (``evalkit.inspect_io``). Registered by ``import_runs`` and ``export`` (this module
is no command of its own).

Import: each Inspect log (``.eval`` or ``.json``; a folder is searched as ``inspect view`` lists it)
becomes one run record of kind ``import``: its model, task and task args, dataset, every sample of
every epoch with its scores and token usage, one metric per scorer with evalkit's interval (over
samples, each the mean of its epochs) and Inspect's own figures beside it. With ``--task-map
INSPECT_TASK=EVALKIT_TASK`` and evalkit able to read that task's data (``--data``, else its default
source), samples take evalkit's doc ids and hashes, so ``evalkit compare``/``gate`` pair them with
evalkit runs by doc.
"""
from __future__ import annotations

import argparse

from evalkit.cli.import_report import print_imported


def add_import_parser(fmt, parse_task_map) -> None:
    """``evalkit import inspect``; ``parse_task_map`` reads ``--task-map`` as ``evalkit import lm-eval`` does."""
    q = fmt.add_parser("inspect", help="Inspect eval logs (.eval or .json; folders are searched)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    q.add_argument("paths", nargs="+", metavar="LOG_OR_FOLDER", help="Inspect log files or folders holding them")
    q.add_argument("--output", default="results", help="results folder the run records are written to")
    q.add_argument("--task-map", action="append", default=[], metavar="INSPECT_TASK=EVALKIT_TASK",
                   help="record Inspect task INSPECT_TASK as evalkit's EVALKIT_TASK (repeatable, comma lists)")
    q.add_argument("--data", action="append", default=[], metavar="TASK=PATH",
                   help="where evalkit reads TASK's data (to give samples evalkit's doc ids and hashes)")
    q.add_argument("--metric-map", action="append", default=[], metavar="INSPECT_METRIC=EVALKIT_METRIC",
                   help="record Inspect's metric (a scorer's name, or SCORER/KEY) under evalkit's name, so it meets "
                        "an evalkit run's metric in compare and gate (repeatable, comma lists)")
    q.add_argument("--label", default=None, help="run id label (default: the model's name)")
    q.add_argument("--allow-mismatch", action="store_true",
                   help="import samples that are no doc of the mapped evalkit task under Inspect's task name "
                        "and sample ids, with a note")
    q.add_argument("--force", action="store_true",
                   help="import a log whose eval id is already among the records in --output (default: skipped "
                        "with a note, as is a second copy of one log)")
    q.set_defaults(func=run_import, parse_task_map=parse_task_map)


def run_import(args) -> int:
    from evalkit.cli.run import parse_data_paths
    from evalkit.inspect_io.files import find_logs, inspect_log_api, read_log
    from evalkit.inspect_io.importer import import_log
    from evalkit.records import write_run
    from evalkit.run import validation
    from evalkit.taskapi import registry
    inspect_log_api()  # the extra is missing: say so before anything else
    task_map = args.parse_task_map(args.task_map)
    metric_map = _pairs(args.metric_map, "--metric-map", "INSPECT_METRIC=EVALKIT_METRIC")
    for ek in set(task_map.values()):
        registry.get_task_class(ek)  # an unknown evalkit task fails here, by name
    data = parse_data_paths(args.data)
    validation.check_output_dir(args.output)
    paths = find_logs(args.paths)
    logs = [(p, read_log(p)) for p in paths]  # every file is checked before any record is written
    tasks = {log.eval.task for _, log in logs}
    unused = sorted(k for k in task_map if k not in tasks and not any(k == t.replace("/", "__") for t in tasks))
    if unused:
        raise ValueError(f"--task-map names Inspect task(s) in none of the logs: {', '.join(unused)} "
                         f"(the logs hold {', '.join(sorted(tasks))})")
    done = {} if getattr(args, "force", False) else imported_eval_ids(args.output)
    for path, log in logs:
        eval_id = log.eval.eval_id
        if eval_id in done:
            print(f"{path}: skipped: its eval {eval_id} is already imported ({done[eval_id]}); --force imports it again")
            continue
        run_, rows, notes = import_log(path, log, task_map, data, args.label, args.allow_mismatch, metric_map)
        out = write_run(args.output, run_, rows)
        if not getattr(args, "force", False):
            done[eval_id] = out
        print_imported(path, out, run_, notes, "Inspect", "inspect", lambda info, _: f" x {info['epochs']} epoch(s)")
    return 0


def imported_eval_ids(output) -> dict:
    """``{Inspect eval id: run folder}`` of the records under ``output`` imported from Inspect logs."""
    import json
    from pathlib import Path
    out = {}
    for run_json in sorted(Path(output).glob("*/run.json")) if Path(output).is_dir() else []:
        try:
            inspect_info = (json.loads(run_json.read_text(encoding="utf-8")).get("config") or {}).get("inspect") or {}
        except (OSError, ValueError, AttributeError):
            continue  # not a record this import can read: it pairs with nothing
        if isinstance(inspect_info, dict) and inspect_info.get("eval_id"):
            out.setdefault(inspect_info["eval_id"], run_json.parent)
    return out


def _pairs(items, flag: str, form: str) -> dict:
    out = {}
    for part in (p for item in items for p in str(item).split(",") if p.strip()):
        k, eq, v = part.partition("=")
        if not eq or not k.strip() or not v.strip():
            raise ValueError(f"{flag} {part!r}: expected {form}")
        out[k.strip()] = v.strip()
    return out


def run_export(rec, args, tasks) -> int:
    from evalkit.inspect_io.exporter import export_run
    for path in export_run(rec, args.output, tasks, getattr(args, "log_format", None) or "eval"):
        print(f"wrote {path}")
    return 0
