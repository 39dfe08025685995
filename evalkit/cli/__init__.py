"""The ``evalkit`` command. Each subcommand lives in its own module with ``register(subparsers)``."""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import sqlite3
import sys
import traceback

from evalkit.util.extras import MissingExtra, import_failure


def command_modules() -> list[str]:
    """Every module in this package with a ``register`` function is a subcommand."""
    import pkgutil
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


from evalkit.util.errors import EvalkitError  # noqa: E402,F401 (re-exported: commands raise it)


# everyday failures: one line, exit 2, no traceback unless --verbose (anything else is a bug: traceback)
USER_ERRORS = (EvalkitError, ValueError, OSError, sqlite3.Error, UnicodeDecodeError)


def one_line(e: BaseException) -> str:
    from evalkit.records.redact import redact_text
    text = str(e) or type(e).__name__
    if isinstance(e, OSError) and e.filename and str(e.filename) not in text:
        text = f"{e.filename}: {text}"
    return redact_text(" ".join(text.split()))


def _version() -> str:
    from evalkit import __version__
    return __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="evalkit", description="LLM evaluation harness with honest statistics")
    parser.add_argument("-v", "--verbose", action="store_true", help="log more")
    parser.add_argument("--version", action="version", version=f"evalkit {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in command_modules():
        mod = importlib.import_module(f"evalkit.cli.{name}")
        if hasattr(mod, "register"):
            mod.register(sub)
    for p in sub.choices.values():  # `evalkit run ... --verbose` works as well as `evalkit -v run ...`
        p.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                       help="log more; show tracebacks of errors")
    return parser


TOP_FLAGS = {"-h", "--help", "-v", "--verbose", "--version"}


def lm_eval_argv(parser: argparse.ArgumentParser, argv: list) -> list:
    """lm-eval's command lines: ``evalkit --model ...`` (no subcommand) is ``evalkit run ...``, and
    ``run`` takes lm-eval's spellings (``evalkit.lm_eval_io.argv``)."""
    lead = [a for a in argv[:2] if a in ("-v", "--verbose")]
    rest = argv[len(lead):]
    if rest and rest[0].startswith("-") and rest[0] not in TOP_FLAGS:
        rest = ["run"] + rest
    if not rest or rest[0] != "run":
        return argv
    from evalkit.lm_eval_io.argv import translate
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["run"]
    known = {s for a in sub._actions for s in a.option_strings}
    return lead + ["run"] + translate(rest[1:], known)


def crashed(command, e: BaseException) -> int:
    """An unexpected exception is a bug, not a verdict: its traceback, one line, exit 2 ("error"), never
    1, which `compare`/`gate` (and the CI script) read as "regression"."""
    traceback.print_exc()
    who = f"evalkit {command}" if command else "evalkit"
    print(f"{who}: internal error ({type(e).__name__}: {one_line(e)[:300]}); the traceback above is a bug "
          f"in evalkit, please report it", file=sys.stderr)
    return 2


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(argv)
    except Exception as e:  # noqa: BLE001 -- before a command was chosen (a module that fails to import...)
        return crashed(None, e)


def _main(argv: list) -> int:
    parser = build_parser()
    try:
        argv = lm_eval_argv(parser, argv)
    except EvalkitError as e:
        print(f"evalkit run: error: {one_line(e)}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    # vLLM logs every engine step at INFO through its own handler: only with --verbose
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "INFO" if args.verbose else "WARNING")
    from evalkit.taskapi import data
    data.DATA_FLAG_HINT = "--data TASK=PATH"  # a command that takes another form sets its own
    try:
        from evalkit.cli.options import check as check_options
        check_options(args)  # the options every command shares, before any of its work (#38)
        return int(args.func(args) or 0)
    except USER_ERRORS + (MissingExtra,) as e:
        if args.verbose:
            traceback.print_exc()
        print(f"evalkit {args.command}: error: {one_line(e)}", file=sys.stderr)
        return 2
    except ImportError as e:   # an optional dependency (or one of its own) is missing: name the fix
        msg = import_failure(e)
        if msg is None:
            return crashed(args.command, e)
        print(f"evalkit {args.command}: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; finished work is in the cache, rerun to resume", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 -- a crash exits 2 (error), whatever the command
        return crashed(args.command, e)


if __name__ == "__main__":
    sys.exit(main())
