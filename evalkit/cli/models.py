"""``evalkit models prepare NAME`` / ``evalkit models list``: the bundled tiny models;
``evalkit models options BACKEND``: what ``--model-args`` a backend takes."""
from __future__ import annotations

from evalkit.backends import model_dirs as models
from evalkit.backends.options import OPTIONS, markdown_table


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
    opts = msub.add_parser("options", help="the --model-args a backend takes: type, default, what each does",
                           description="Each key, its values, its default and what it does, from the backend's "
                                       "own declaration (evalkit/backends/options.py); a Markdown table.")
    opts.add_argument("backend", choices=list(OPTIONS))
    opts.set_defaults(func=_options)


def _prepare(args):
    print(models.prepare(args.name, force=args.force))
    return 0


def _list(args):
    for name, desc in models.describe_bundled():
        path = models.bundled_path(name)
        state = str(path) if (path / "config.json").exists() else "(not prepared)"
        print(f"{name}  {desc}  {state}")
    return 0


def _options(args):
    print(markdown_table(args.backend))
    return 0
