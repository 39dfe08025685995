"""The leaderboard's server process: ``python -m evalkit.dashboards.serve STREAMLIT-FLAGS`` runs
``streamlit run app.py`` in this process after starting a thread that gets the first page ready
while the first browser is still loading Streamlit's scripts (``warm``): it imports the page's
modules, brings the run index up to date, builds the frames and ranks the default board. The first
session then finds that work done, or waits for it (the store's and the ranking's locks) rather than
doing it twice. Results folder and battle files: ``sources.settings`` (the environment)."""
from __future__ import annotations

import gc
import sys
import threading
import time
from pathlib import Path

#: what the first page imports (a second when a session does it)
PAGE_MODULES = ("pandas", "numpy", "altair", "evalkit.dashboards.view_leaderboard", "evalkit.dashboards.board",
                "evalkit.dashboards.charts", "evalkit.dashboards.rowcontrols", "evalkit.dashboards.urlstate",
                "evalkit.taskapi.registry")


def warm(results: str, battles: tuple, log=sys.stderr) -> None:
    """Import the page's modules, load the store and rank the default board (``board.default_board``)."""
    import importlib
    t0 = time.perf_counter()
    try:
        for name in PAGE_MODULES:
            importlib.import_module(name)
        from evalkit.dashboards import board
        from evalkit.dashboards.store import shared_store
        store = shared_store(results, battles)
        store.refresh()
        board.default_board(store.cells())
        print(f"evalkit leaderboard: {len(store.summaries()):,} runs ready in {time.perf_counter() - t0:.1f} s",
              file=log, flush=True)
    except Exception as e:  # noqa: BLE001 - the first session does the work itself and shows the error
        print(f"evalkit leaderboard: warm-up skipped ({type(e).__name__}: {e})", file=log, flush=True)


def _warm_server(results: str, battles: tuple) -> None:
    warm(results, battles)
    gc.collect()
    gc.freeze()        # what is loaded lives as long as the server: the collector's passes skip it


def main(argv=None) -> int:
    from evalkit.dashboards.sources import settings
    results, battles = settings([])
    threading.Thread(target=_warm_server, args=(results, battles), name="evalkit-warm", daemon=True).start()
    from streamlit.web import cli
    app = Path(__file__).with_name("app.py")
    sys.argv = ["streamlit", "run", str(app), *(sys.argv[1:] if argv is None else argv)]
    return cli.main(prog_name="streamlit")


if __name__ == "__main__":
    sys.exit(main())
