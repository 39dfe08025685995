"""``evalkit runs list|show|index``: the runs of a results folder, from its run index.

The index (``DIR/.evalkit-index.sqlite``, see ``evalkit.records.index``) is brought up to date first:
only new or changed run.json files are read, so a folder of thousands of runs answers in well under a
second after the first time. Deleting the index loses nothing.
"""
from __future__ import annotations

import json
import sys

from evalkit.records import index


def register(sub):
    p = sub.add_parser("runs", help="list, filter and show the runs of a results folder (from its run index)",
                       description=__doc__)
    rsub = p.add_subparsers(dest="runs_command", metavar="ACTION")
    rsub.required = True
    lst = rsub.add_parser("list", help="one line per run, newest first; filter by model, task, tag and date")
    _common(lst)
    lst.add_argument("--model", metavar="PATTERN", help="model name or spec, shell-style (smollm2*, hf:*)")
    lst.add_argument("--task", metavar="PATTERN", help="runs with a task matching it (gsm8k, mmlu_*)")
    lst.add_argument("--tag", help="runs carrying this tag (evalkit run --tag)")
    lst.add_argument("--since", metavar="DATE", help="created on or after DATE (YYYY-MM-DD)")
    lst.add_argument("--until", metavar="DATE", help="created on or before DATE (YYYY-MM-DD)")
    lst.set_defaults(func=_list)
    show = rsub.add_parser("show", help="one run's model, tags and every metric with its 95%% interval")
    _common(show)
    show.add_argument("run", metavar="RUN", help="the run's folder name or run id")
    show.set_defaults(func=_show)
    idx = rsub.add_parser("index", help="bring the index up to date (or rebuild it with --rebuild) and say so")
    _common(idx)
    idx.add_argument("--rebuild", action="store_true", help="delete the index first and read every record")
    idx.set_defaults(func=_index)


def _common(p):
    p.add_argument("--results", default="results", metavar="DIR", help="results folder (default: results)")
    p.add_argument("--format", choices=("table", "json"), default="table", help="output format (default table)")


def _updated(args) -> index.Updated:
    done = index.update(args.results)
    for line in done.unreadable.values():
        print(f"warning: skipped {line}", file=sys.stderr)
    return done


def _list(args) -> int:
    query = index.Query(args.model, args.task, args.tag, index.check_date(args.since, "--since"),
                        index.check_date(args.until, "--until"))
    _updated(args)
    found = index.runs(args.results, query)
    if args.format == "json":
        print(json.dumps(found, indent=1))
        return 0
    rows = [(r["created_at"][:16].replace("T", " "), r["model"] or r["spec"], r["kind"],
             ",".join(sorted({m["task"] for m in r["metrics"]})), ",".join(r["tags"]), r["folder"]) for r in found]
    _table(("created (UTC)", "model", "kind", "tasks", "tags", "folder"), rows)
    print(f"{len(found)} run(s)", file=sys.stderr)
    return 0


def _show(args) -> int:
    _updated(args)
    found = [r for r in index.runs(args.results) if args.run in (r["folder"], r["run_id"])]
    if not found:
        raise ValueError(f"{args.run}: no run of that folder name or run id in {args.results} "
                         f"(see `evalkit runs list --results {args.results}`)")
    run = found[0]
    if args.format == "json":
        print(json.dumps(run, indent=1))
        return 0
    print(f"{run['folder']}  {run['model']}  ({run['spec']}, {run['kind']}, {run['created_at']})")
    if run["tags"]:
        print(f"tags: {', '.join(run['tags'])}")
    _table(("task", "metric", "value", "95% CI", "n"),
           [(m["task"], m["metric"], _num(m["value"]), f"[{_num(m['ci_low'])}, {_num(m['ci_high'])}]", m["n"])
            for m in run["metrics"]])
    return 0


def _index(args) -> int:
    if args.rebuild:
        for suffix in ("", "-wal", "-shm"):
            path = index.index_path(args.results).with_name(index.INDEX_NAME + suffix)
            path.unlink(missing_ok=True)
    done = _updated(args)
    summary = {"runs": done.total, "read": done.read, "removed": done.removed, "unreadable": len(done.unreadable),
               "index": str(index.index_path(args.results))}
    print(json.dumps(summary) if args.format == "json" else
          f"{done.total} run(s) indexed ({done.read} read, {done.removed} removed, "
          f"{len(done.unreadable)} unreadable): {summary['index']}")
    return 0


def _num(v) -> str:
    return "-" if v is None else f"{v:.4f}"


def _table(head: tuple, rows: list) -> None:
    cells = [tuple(str(c) for c in head)] + [tuple("" if c is None else str(c) for c in r) for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(head))]
    for r in cells:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
