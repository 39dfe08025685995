"""Which results folder and battle files the leaderboard shows: the app's script arguments
(``--results DIR``, ``--battles FILE``...) or, as ``evalkit leaderboard`` passes them, the
``EVALKIT_DASHBOARD_RESULTS`` / ``EVALKIT_DASHBOARD_BATTLES`` (``os.pathsep``-separated) environment
variables. No Streamlit here: the server's warm-up reads them too."""
from __future__ import annotations

import argparse
import os
import sys

RESULTS_ENV = "EVALKIT_DASHBOARD_RESULTS"
BATTLES_ENV = "EVALKIT_DASHBOARD_BATTLES"


def settings(argv=None) -> tuple[str, tuple]:
    """``(results folder, battle files)``, absolute."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--results", default=None)
    p.add_argument("--battles", action="append", default=[])
    args, _ = p.parse_known_args(sys.argv[1:] if argv is None else argv)
    results = args.results or os.environ.get(RESULTS_ENV) or "results"
    battles = args.battles or [b for b in os.environ.get(BATTLES_ENV, "").split(os.pathsep) if b]
    return os.path.abspath(results), tuple(os.path.abspath(b) for b in battles)
