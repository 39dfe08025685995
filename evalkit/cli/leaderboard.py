"""``evalkit leaderboard --results DIR``: the Streamlit leaderboard over a results folder.

Runs ``streamlit run <installed evalkit/dashboards/app.py>`` (through ``evalkit.dashboards.serve``,
which loads the runs and ranks the default board as the server starts) bound to loopback (``--host``
to change it) with usage statistics off and headless (no browser is opened, no external IP lookup);
the results folder and battle files reach the app through environment variables.
"""
from __future__ import annotations

import importlib.util
import ipaddress
import os
import signal
import subprocess
import sys
from pathlib import Path

RESULTS_ENV = "EVALKIT_DASHBOARD_RESULTS"
BATTLES_ENV = "EVALKIT_DASHBOARD_BATTLES"


def register(sub):
    p = sub.add_parser("leaderboard", help="browse run records: leaderboard, task, compare and arena views",
                       description=__doc__)
    p.add_argument("--results", default="results", metavar="DIR", help="results folder (default: results)")
    p.add_argument("--battles", action="append", default=[], metavar="FILE",
                   help="battle file(s) (JSONL, model_a/model_b/winner) to rate and show in the arena view")
    p.add_argument("--port", type=int, default=8501, help="port (default 8501)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, loopback only)")
    p.set_defaults(func=run)


def app_path() -> Path:
    spec = importlib.util.find_spec("evalkit.dashboards.app")
    if spec is None or not spec.origin:
        raise ValueError("evalkit.dashboards is not installed with this evalkit")
    return Path(spec.origin)


def streamlit_command(host: str, port: int) -> list[str]:
    """The server's command line: ``streamlit run app.py FLAGS`` in a process that warms up first.
    ``runner.postScriptGC`` off: Streamlit's full garbage collection after every script run walked
    every loaded run's objects (0.25 s a click at 10,000 runs); Python's own collector still runs."""
    app_path()                                   # the app is installed
    return [sys.executable, "-m", "evalkit.dashboards.serve",
            "--server.address", host, "--server.port", str(port),
            "--browser.gatherUsageStats", "false", "--server.headless", "true",
            "--server.fileWatcherType", "none",
            "--runner.postScriptGC", "false", "--client.toolbarMode", "viewer"]


def environment(results: str, battles) -> dict:
    env = dict(os.environ)
    env[RESULTS_ENV] = str(Path(results).resolve())
    env[BATTLES_ENV] = os.pathsep.join(str(Path(b).resolve()) for b in battles)
    env["STREAMLIT_BROWSER_GATHER_USAGE_STATS"] = "false"
    return env


def run(args) -> int:
    if importlib.util.find_spec("streamlit") is None or importlib.util.find_spec("altair") is None:
        from evalkit.util.extras import install_hint
        raise ValueError(f"the leaderboard needs streamlit and altair: {install_hint('dashboard')}")
    if not Path(args.results).is_dir():
        raise ValueError(f"--results {args.results}: no such folder")
    for b in args.battles:
        if not Path(b).is_file():
            raise ValueError(f"--battles {b}: no such file")
    try:
        loopback = ipaddress.ip_address(args.host).is_loopback
    except ValueError:
        loopback = args.host == "localhost"
    if not loopback:
        print(f"warning: binding to {args.host}: anyone who can reach it can read every run record "
              f"(prompts, outputs)", file=sys.stderr)
    print(f"evalkit leaderboard: http://{args.host}:{args.port}  (results: {Path(args.results).resolve()})",
          file=sys.stderr, flush=True)
    return serve(streamlit_command(args.host, args.port), environment(args.results, args.battles))


def serve(command: list, env: dict) -> int:
    """Run the server until it exits; SIGTERM or SIGINT (Ctrl-C) to evalkit stops it too (a server left on
    its port after `kill PID` is the bug this prevents), within 10 s, then by SIGKILL."""
    proc = subprocess.Popen(command, env=env)

    def stop(signum, frame):
        raise KeyboardInterrupt
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
