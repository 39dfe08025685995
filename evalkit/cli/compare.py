"""``evalkit compare BASELINE CANDIDATE``: paired significance tests between two run records.

Exit code 0: no primary metric regressed; 1: at least one regressed (significantly worse by more
than its margin after the multiplicity correction); 2: usage or input error, or the runs are not
comparable.

Formats: text (terminal), markdown (PR comment / step summary), json, junit (JUnit XML test report:
one test case per task x primary metric, regressions as failures), github (workflow-command
annotations). --junit FILE and --markdown FILE write those alongside the printed format.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from evalkit.taskapi import registry
from evalkit.compare import CompareOptions, compare_runs, render
from evalkit.compare.multiplicity import METHODS
from evalkit.compare.report import FORMATS


def parse_margins(items) -> dict:
    out = {}
    for item in items or []:
        for part in str(item).split(","):
            if not part.strip():
                continue
            if "=" not in part:
                raise ValueError(f"--margins {part!r}: expected TASK=POINTS or TASK:METRIC=POINTS")
            k, v = part.split("=", 1)
            try:
                out[k.strip()] = float(v)
            except ValueError:
                raise ValueError(f"--margins {part!r}: {v!r} is not a number") from None
    return out


def split_list(items) -> list:
    return [x.strip() for item in items or [] for x in str(item).split(",") if x.strip()]


def add_compare_args(p: argparse.ArgumentParser, defaults: bool = True):
    """Options shared by ``compare`` and ``gate`` (for gate, None means "take the config file's")."""
    d = (lambda v: v) if defaults else (lambda v: None)
    p.add_argument("--margin", type=float, default=d(0.0),
                   help="tolerated drop in points (x100 for [0,1] metrics, metric units otherwise); default 0")
    p.add_argument("--margins", action="append", default=[], metavar="TASK[:METRIC]=POINTS",
                   help="per-task or per-metric margins (repeatable, comma lists)")
    p.add_argument("--alpha", type=float, default=d(0.05), help="one-sided significance level (default 0.05)")
    p.add_argument("--correction", choices=METHODS, default=d("holm"),
                   help="multiplicity correction across the primary tests (default holm)")
    p.add_argument("--primary", action="append", default=[], metavar="TASK:METRIC",
                   help="the tests that decide the exit code (globs; 'metric' means in every task); "
                        "default: every 0/1 and corpus metric")
    p.add_argument("--format", choices=FORMATS, default=d("text"))
    p.add_argument("--report", default=None, metavar="FILE", help="also write the report to FILE")
    p.add_argument("--junit", default=None, metavar="FILE",
                   help="also write a JUnit XML report (one test case per task x primary metric) to FILE")
    p.add_argument("--markdown", default=None, metavar="FILE",
                   help="also write the Markdown report (PR comment, $GITHUB_STEP_SUMMARY) to FILE")
    p.add_argument("--mid-p", action="store_true", default=None, help="mid-p McNemar (less conservative)")
    p.add_argument("--bootstrap", action="store_true", default=None,
                   help="paired bootstrap for every test (no McNemar or permutation)")
    p.add_argument("--replicates", type=int, default=d(2000), help="bootstrap/permutation replicates (mean metrics)")
    p.add_argument("--corpus-replicates", type=int, default=d(1000), help="bootstrap replicates (corpus metrics)")
    p.add_argument("--seed", type=int, default=d(1234), help="seed of every resampling")
    p.add_argument("--examples", type=int, default=d(3), help="flipped items shown per direction and task")
    p.add_argument("--allow-prompt-change", action="store_true", default=None,
                   help="compare even if prompts or task versions differ")
    p.add_argument("--allow-data-change", action="store_true", default=None,
                   help="compare the common docs even if the runs evaluated different data")


def options_from(args, base: dict | None = None) -> CompareOptions:
    """CompareOptions from a config table ``base`` overridden by the command line ``args``."""
    o = dict(base or {})
    o["margins"] = {str(k): float(v) for k, v in dict(o.get("margins", {})).items()}
    o["margins"].update(parse_margins(args.margins))
    if args.primary:
        o["primary"] = split_list(args.primary)
    elif isinstance(o.get("primary"), str):
        o["primary"] = split_list([o["primary"]])
    for name in ("margin", "alpha", "correction", "replicates", "corpus_replicates", "seed", "examples"):
        v = getattr(args, name, None)
        if v is not None:
            o[name] = v
    for flag, key in (("mid_p", "mid_p"), ("bootstrap", "force_bootstrap"),
                      ("allow_prompt_change", "allow_prompt_change"), ("allow_data_change", "allow_data_change")):
        if getattr(args, flag, None):
            o[key] = True
    if "bootstrap" in o:
        o["force_bootstrap"] = bool(o.pop("bootstrap"))
    for drop in ("format", "report"):
        o.pop(drop, None)
    known = set(CompareOptions.__dataclass_fields__)
    unknown = set(o) - known
    if unknown:
        raise ValueError(f"unknown compare option(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
    if o.get("tasks") is not None and isinstance(o["tasks"], str):
        o["tasks"] = split_list([o["tasks"]])
    check_ranges(o)
    return CompareOptions(**o)


def check_ranges(o: dict) -> None:
    """The options' ranges, one check for `compare` and `gate` (flags and config tables alike),
    before any run is read or any model evaluated."""
    from evalkit.compare.multiplicity import METHODS
    checks = {"margin": (lambda v: v >= 0, "a number of points >= 0"),
              "alpha": (lambda v: 0 < v < 1, "a number between 0 and 1"),
              "replicates": (lambda v: v >= 1, "an integer >= 1"),
              "corpus_replicates": (lambda v: v >= 1, "an integer >= 1"),
              "examples": (lambda v: v >= 0, "an integer >= 0")}
    for key, (ok, want) in checks.items():
        if o.get(key) is not None and not ok(o[key]):
            raise ValueError(f"{key} = {o[key]!r}: expected {want}")
    for key, v in (o.get("margins") or {}).items():
        if v < 0:
            raise ValueError(f"margins {key} = {v!r}: expected a number of points >= 0")
    if o.get("correction") is not None and o["correction"] not in METHODS:
        raise ValueError(f"correction = {o['correction']!r}: allowed {', '.join(METHODS)}")


def _write(path, text: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text + "\n", encoding="utf-8")


def emit(comparison, fmt: str, report_path, extra: dict | None = None) -> None:
    """Print the report in ``fmt`` (and write it to ``report_path``); ``extra``: format -> file."""
    text = render(comparison, fmt)
    print(text)
    if report_path:
        _write(report_path, text)
    for other, path in (extra or {}).items():
        if path:
            _write(path, text if other == fmt else render(comparison, other))


def extra_reports(args) -> dict:
    return {"junit": getattr(args, "junit", None), "markdown": getattr(args, "markdown", None)}


def register(sub):
    p = sub.add_parser("compare", help="paired significance tests: candidate run vs baseline run (exit 1 on regression)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("baseline", help="baseline run folder (results/<run-id>)")
    p.add_argument("candidate", help="candidate run folder")
    p.add_argument("--tasks", default=None, help="compare only these tasks (comma list)")
    p.add_argument("--include-path", action="append", default=[], metavar="DIR",
                   help="task files (needed to recompute corpus metrics of custom tasks)")
    add_compare_args(p)
    p.set_defaults(func=run)


def run(args) -> int:
    for path in args.include_path:
        registry.include_path(path)
    opts = options_from(args)
    if args.tasks:
        opts.tasks = split_list([args.tasks])
    comparison = compare_runs(args.baseline, args.candidate, opts)
    emit(comparison, args.format, args.report, extra_reports(args))
    return comparison.exit_code
