"""``evalkit ci-gate``: run the regression gate as CI does (the commands of .github/actions/gate).

Configured by environment variables (so a CI file only sets them): EVALKIT_BASELINE (run folder or
downloaded artifact folder), EVALKIT_CANDIDATE (BACKEND:MODEL) or EVALKIT_CANDIDATE_RUN (saved run),
EVALKIT_CONFIG, EVALKIT_MARGIN, EVALKIT_PRIMARY, EVALKIT_ALPHA, EVALKIT_CANDIDATE_ARGS,
EVALKIT_INCLUDE_PATH, EVALKIT_CACHE_DIR, EVALKIT_GATE_ARGS, EVALKIT_REPORT_DIR (default
evalkit-gate: gate-report.md, gate-junit.xml), EVALKIT_FAIL_ON_REGRESSION (1 default, 0 report only).
Writes $GITHUB_STEP_SUMMARY / $GITHUB_OUTPUT when set. Exit 0 no regression, 1 regression, 2 error.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys


def register(sub):
    p = sub.add_parser("ci-gate", help="the regression gate as CI runs it (configured by EVALKIT_* variables)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--print-path", action="store_true", help="print the script's path and exit")
    p.set_defaults(func=run)


def run(args) -> int:
    from evalkit.ci import GATE_SCRIPT
    if args.print_path:
        print(GATE_SCRIPT)
        return 0
    bash = shutil.which("bash")
    if bash is None:
        raise OSError("evalkit ci-gate needs bash")
    env = dict(os.environ)
    # the script calls evalkit: make it this installation's, whatever PATH says
    env.setdefault("EVALKIT_BIN", f"{sys.executable} -m evalkit")
    sys.stdout.flush()
    os.execve(bash, [bash, str(GATE_SCRIPT)], env)
    return 2   # not reached
