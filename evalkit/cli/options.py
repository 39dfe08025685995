"""One check of the options every command shares, run by ``evalkit.cli.main`` after argparse and
before a command's own code: ``--limit`` (>= 1, or absent), ``--num-fewshot`` (>= 0), counts such
as ``--batch-size``/``--depth``/``--budget`` (>= 1), ``--margin`` (>= 0, finite) and ``--output``
(a folder, or for ``reward`` a file, that can be written), so a mistake is one line naming the flag
and what is allowed before any model loads, any request is sent or anything is scored.

The checks of values that are not flags (``--model-args`` keys such as ``batch_size``, task options,
gen kwargs) stay in ``evalkit.run.validation``; the output checks here call its
``check_output_dir``/``check_output_file`` so every command words them alike. What differs per
command is only in the tables below (the unit a ``--limit`` counts, ``run``'s fractional limit,
the commands whose ``--output`` is a file). Reference: lm-eval checks ``--limit`` in
``lm_eval/__main__.py`` (only on ``run``); evalkit applies one rule to every command.
"""
from __future__ import annotations

import argparse
import math

from evalkit.run import validation
from evalkit.util.errors import ConfigError

#: what ``--limit`` counts, per command (the word in the message)
LIMIT_UNIT = {"run": "docs", "score": "predictions", "export-rl": "rows", "retrieve": "queries",
              "check-canonical": "problems", "mt-bench": "questions", "arena": "questions", "parity": "docs"}
#: commands whose ``--limit`` may also be a fraction in (0, 1) of each task's docs
LIMIT_FRACTION = {"run", "parity"}
#: integer flags (argparse dest) that count something: the least allowed value
COUNTS = {"num_fewshot": 0, "batch_size": 1, "depth": 1, "rerank_top": 1, "threads": 1, "budget": 1,
          "round_size": 1, "rounds": 1, "max_tokens": 1, "judge_max_tokens": 1, "index_threshold": 1,
          "rerank_doc_chars": 0, "rrf_k": 0}
#: commands whose ``--output`` is a folder that records are written into (``reward``: a file)
OUTPUT_DIR = {"run", "score", "retrieve", "export-rl", "import", "arena", "mt-bench", "merge", "export",
              "check-canonical", "gate"}
OUTPUT_FILE = {"reward", "parity"}


def flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def check_limit(value, command: str = "", name: str = "--limit") -> None:
    """``--limit``: absent, an integer >= 1, or (``run``) a fraction in (0, 1)."""
    if value is None:
        return
    unit = LIMIT_UNIT.get(command, "items")
    frac = command in LIMIT_FRACTION
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and (
        (value >= 1 and value == int(value)) or (frac and 0 < value < 1))
    if not ok:
        more = " or a fraction in (0, 1)" if frac else ""
        raise ConfigError(f"{name} {value:g}: must be a number of {unit} >= 1{more}")


def check_count(value, name: str, least: int = 1) -> None:
    """An integer option that counts something: absent, ``auto`` (batch sizes) or >= ``least``."""
    if value is None or (name.endswith("batch-size") and value == "auto"):
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ConfigError(f"{name} {value!r}: must be an integer >= {least}")


def check_margin(value, name: str = "--margin") -> None:
    """A tolerated drop in points: a finite number >= 0 (``None``: the config's value is used)."""
    if value is None or not isinstance(value, (int, float)) or isinstance(value, bool):
        return  # a sentinel default (compare reads the config's margin); compare checks the merged value
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"{name} {value:g}: margin = {value!r}, must be a number of points >= 0")


def check_output(args: argparse.Namespace, command: str) -> None:
    """``--output`` checked writable before any work (folders are not created here)."""
    out = getattr(args, "output", None)
    if out is None or getattr(args, "no_output", False):
        return
    try:
        if command in OUTPUT_FILE:
            validation.check_output_file(str(out))
        elif command in OUTPUT_DIR:
            validation.check_output_dir(str(out))
    except ConfigError as e:
        if hasattr(args, "no_output"):
            raise
        # a command without --no-output: the hint would name a flag it does not have
        raise ConfigError(str(e).replace(" or pass --no-output", "")) from None


def check(args: argparse.Namespace) -> None:
    """Every shared option of the parsed command line; raises ConfigError (one line) on the first bad one."""
    command = getattr(args, "command", "") or ""
    if command in ("compare", "power", "gate"):
        check_margin(getattr(args, "margin", None))
    check_limit(getattr(args, "limit", None), command)
    for dest, least in COUNTS.items():
        if hasattr(args, dest):
            check_count(getattr(args, dest), flag(dest), least)
    check_output(args, command)
