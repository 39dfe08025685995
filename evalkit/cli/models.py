"""``evalkit models prepare NAME`` / ``evalkit models list``: the bundled tiny models."""
from __future__ import annotations

from evalkit.backends import model_dirs as models


def register(sub):
    p = sub.add_parser("models", help="bundled models")
    msub = p.add_subparsers(dest="models_command", metavar="ACTION")
    msub.required = True
    prep = msub.add_parser("prepare", help="build a bundled model's HF directory once and print its path")
    prep.add_argument("name", choices=[n for n, _ in models.describe_bundled()])
    prep.add_argument("--force", action="store_true", help="rebuild even if present")
    prep.set_defaults(func=_prepare)
    lst = msub.add_parser("list", help="list bundled models")
    lst.set_defaults(func=_list)


def _prepare(args):
    print(models.prepare(args.name, force=args.force))
    return 0


def _list(args):
    for name, desc in models.describe_bundled():
        path = models.bundled_path(name)
        state = str(path) if (path / "config.json").exists() else "(not prepared)"
        print(f"{name}  {desc}  {state}")
    return 0
