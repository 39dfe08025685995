"""``evalkit tasks``: every task with a one-line description."""
from __future__ import annotations

from evalkit.taskapi import registry


def register(sub):
    p = sub.add_parser("tasks", help="list tasks")
    p.add_argument("--include-path", action="append", default=[], help="folder of extra task files")
    p.set_defaults(func=run)


def run(args):
    for path in args.include_path:
        registry.include_path(path)
    tasks = registry.all_tasks()
    width = max(len(n) for n in tasks) if tasks else 10
    for name, cls in tasks.items():
        print(f"{name:<{width}}  {cls.description}")
    return 0
