"""Screenshots of every leaderboard view, from real run records, in the system Chromium.

    python scripts/dashboard_screenshots.py --out docs/screenshots/
    python scripts/dashboard_screenshots.py --results results/ --out /tmp/shots   # your own records

Without ``--results`` it writes the test fixtures (tests/_dashboard_records.py: GPT-3 GSM8K solutions,
two WMT17 systems, MATH-500, the arena-hard battles, an MT-Bench-like record and 16 models with long
names and 57 subject breakdowns) into a temporary folder. It starts ``evalkit leaderboard`` on loopback,
opens each view by its deep link at 1400 px (the leaderboard also at 800 px) and saves one PNG per view
(palette-compressed, the page's full height). Needs Playwright for Python and /usr/bin/chromium.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
READY = "[data-testid=stApp][data-test-script-state=notRunning]"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]


def fixtures(out: Path) -> Path:
    sys.path.insert(0, str(ROOT / "tests"))
    import _dashboard_records as recs

    results = recs.fast_records(out / "fast")
    recs.many_models(results)
    recs.mt_bench_like(results)
    return results


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``evalkit leaderboard`` in its own process group, on loopback."""

    def __init__(self, results: Path, log: Path, battles=()):
        self.port = free_port()
        self.log = open(log, "w")
        cmd = [sys.executable, "-m", "evalkit", "leaderboard", "--results", str(results), "--port", str(self.port)]
        for b in battles:
            cmd += ["--battles", str(b)]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
                                     env={**os.environ, "PYTHONPATH": str(ROOT)})
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"evalkit leaderboard exited {self.proc.returncode}: {log.read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.3)
        self.close()
        raise RuntimeError("the leaderboard did not start listening within 120 s")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def close(self) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self.log.close()


def wait_ready(page, timeout: float = 120_000) -> None:
    page.wait_for_selector(READY, timeout=timeout)
    page.wait_for_timeout(600)                # charts draw after the script finishes
    page.wait_for_selector(READY, timeout=timeout)


def open_view(page, base: str, **params) -> None:
    page.goto(base + ("?" + urlencode(params, doseq=True) if params else ""), timeout=120_000)
    wait_ready(page)


def shoot(page, path: Path, width: int) -> Path:
    """The whole page (Streamlit scrolls inside its main block, so grow the viewport to its height)."""
    height = page.evaluate("() => Math.max(...[...document.querySelectorAll('[data-testid=stMain], "
                           "[data-testid=stMainBlockContainer]')].map(e => e.scrollHeight), 900)")
    page.set_viewport_size({"width": width, "height": min(int(height) + 40, 6000)})
    page.wait_for_timeout(400)
    page.screenshot(path=str(path))
    page.set_viewport_size({"width": width, "height": 900})
    try:
        from PIL import Image
        Image.open(path).convert("RGB").quantize(colors=128).save(path, optimize=True)
    except ImportError:
        pass
    return path


def views(results: Path) -> list[tuple[str, dict, int]]:
    """(file name, URL parameters, width) for each view."""
    sys.path.insert(0, str(ROOT))
    from evalkit.dashboards.store import ResultsStore

    s = ResultsStore(results)
    s.refresh()
    cells = s.cells()
    col = lambda task: cells[cells["task"] == task]["col"].iloc[0]  # noqa: E731
    gsm = cells[(cells["task"] == "gsm8k") & (cells["n_docs"] == 50)]
    verifier = gsm[gsm["model"] == "gpt3-175b-verifier"]["run_id"].iloc[0]
    out = [("leaderboard.png", {}, 1400), ("leaderboard-800px.png", {}, 800),
           ("task-breakdown-57-subjects.png", {"view": "Task", "task": col("mmlu_like")}, 1400),
           ("task-samples.png", {"view": "Task", "task": gsm["col"].iloc[0], "metric": "exact_match_flexible",
                                 "run": verifier, "doc": "3"}, 1400),
           ("compare.png", {"view": "Compare"}, 1400), ("arena.png", {"view": "Arena"}, 1400)]
    if (cells["task"] == "mt_bench").any():
        out.append(("mt-bench-categories.png", {"view": "Task", "task": col("mt_bench")}, 1400))
    if (cells["task"] == "translation").any():
        out.append(("translation-samples.png", {"view": "Task", "task": col("translation")}, 1400))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder for the PNG files")
    p.add_argument("--results", help="results folder (default: build the test fixtures in a temporary folder)")
    p.add_argument("--only", nargs="*", help="file names to produce (default: all)")
    args = p.parse_args(argv)
    from playwright.sync_api import sync_playwright

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="evalkit-shots-"))
    try:
        results = Path(args.results) if args.results else fixtures(tmp)
        server = Server(results, tmp / "streamlit.log")
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                for name, params, width in views(results):
                    if args.only and name not in args.only:
                        continue
                    page.set_viewport_size({"width": width, "height": 900})
                    open_view(page, server.url, **params)
                    path = shoot(page, out / name, width)
                    print(f"{path}  ({path.stat().st_size // 1024} KiB)")
                browser.close()
        finally:
            server.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
