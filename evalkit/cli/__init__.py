"""The ``evalkit`` command. Each subcommand lives in its own module with ``register(subparsers)``."""
from __future__ import annotations

import argparse
import importlib
import logging
import sys

from evalkit.extras import MissingExtra, message_for


def command_modules() -> list[str]:
    """Every module in this package with a ``register`` function is a subcommand."""
    import pkgutil
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


class EvalkitError(Exception):
    """A user-facing error: printed without a traceback, exit code 2."""


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
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.func(args) or 0)
    except (EvalkitError, ValueError, OSError, MissingExtra) as e:
        print(f"evalkit {args.command}: error: {e}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as e:   # an optional dependency of a slim install: name the extra
        msg = message_for(e.name or "")
        if msg is None:
            raise
        print(f"evalkit {args.command}: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; finished work is in the cache, rerun to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
