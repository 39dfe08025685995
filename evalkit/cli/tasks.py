"""``evalkit tasks``: every task with a one-line description; ``--lm-eval [PATTERN]``: lm-eval's
tasks, groups and tags (run them as ``lm-eval:NAME``); ``--suites``: the named suites."""
from __future__ import annotations

import sys

from evalkit.taskapi import registry


def register(sub):
    p = sub.add_parser("tasks", help="list tasks", description=(
        "List evalkit's tasks, or with --lm-eval the tasks, groups and tags of lm-eval's catalog (needs the "
        "lm-eval extra); any of them runs as `evalkit run --tasks lm-eval:NAME`."))
    p.add_argument("--include-path", action="append", default=[],
                   help="folder of extra task files (evalkit .py task files, or lm-eval YAML configs)")
    p.add_argument("--lm-eval", nargs="?", const="", default=None, metavar="PATTERN",
                   help="list lm-eval's catalog instead; PATTERN: a glob (mmlu_*) or a substring (hellaswag)")
    p.add_argument("--suites", action="store_true",
                   help="list the named suites (`evalkit run --suite NAME`) and their tasks instead")
    p.set_defaults(func=run)


def run(args):
    for path in args.include_path:
        registry.include_path(path)
    if args.suites:
        from evalkit.run import suites
        for name in suites.shipped():
            s = suites.load_suite(name)
            print(f"{name}  {s.description}\n    {', '.join(s.task_names())}")
        return 0
    if args.lm_eval is not None:
        from evalkit.tasks.lm_eval_catalog import catalog
        found = catalog.names(args.lm_eval or None)
        for name, kind in found:
            print(f"lm-eval:{name}  {kind}")
        print(f"{len(found)} of lm-eval {catalog.version()}'s names; run one with --tasks lm-eval:NAME", file=sys.stderr)
        return 0 if found else 1
    tasks = registry.all_tasks()
    width = max(len(n) for n in tasks) if tasks else 10
    for name, cls in tasks.items():
        print(f"{name:<{width}}  {cls.description}")
    return 0
