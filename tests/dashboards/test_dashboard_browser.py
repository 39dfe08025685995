"""The leaderboard in a real browser: ``evalkit leaderboard`` serves real run records on loopback,
the system Chromium (driven by Playwright for Python, never ``playwright install``) waits for the
table, checks its rows and a CI value, switches to the compare view and saves screenshots
(also into $EVALKIT_SCREENSHOT_DIR when set, for CI artifacts)."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import _dashboard_records as recs
from evalkit.records import load_run

pytestmark = [pytest.mark.browser, pytest.mark.server]

CHROMIUM = "/usr/bin/chromium"
READY = "[data-testid=stApp][data-test-script-state=notRunning]"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]


@pytest.fixture(scope="session")
def results(tmp_path_factory) -> Path:
    return recs.fast_records(tmp_path_factory.mktemp("dashboard"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(results, tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium; scripts/install.sh does it)")
    pytest.importorskip("playwright.sync_api", reason="Playwright for Python is missing (pip install playwright)")
    pytest.importorskip("streamlit")
    port = free_port()
    log = open(tmp_path / "streamlit.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "evalkit", "leaderboard", "--results", str(results),
                             "--port", str(port)], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            if proc.poll() is not None:
                raise AssertionError(f"evalkit leaderboard exited {proc.returncode}: "
                                     f"{(tmp_path / 'streamlit.log').read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.3)
        else:
            raise AssertionError("the leaderboard did not start listening within 120 s")
        yield f"http://127.0.0.1:{port}/"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        log.close()


def save(page, tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000
    out = os.environ.get("EVALKIT_SCREENSHOT_DIR")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(out) / name)
    return path


def test_leaderboard_and_compare_in_chromium(server, results, tmp_path):
    from playwright.sync_api import sync_playwright

    uedin = next(load_run(p) for p in results.iterdir() if "uedin" in p.name)
    bleu = uedin.metrics("translation")["bleu"]
    want_ci = f"[{bleu['ci_low']:.2f}, {bleu['ci_high']:.2f}]"      # the grid holds the value as a number
    n_models = 3 + 2 + 1 + 5            # GPT-3 systems, WMT systems, MATH system, arena models
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.goto(server, timeout=120_000)
            page.wait_for_selector(READY, timeout=120_000)
            grid = page.locator("[data-testid=stDataFrame]").first
            grid.locator("[role=row]").nth(n_models).wait_for(state="attached", timeout=120_000)
            assert grid.locator("[role=row]").count() == n_models + 1          # header + one per model
            cells = [c.strip() for c in grid.locator("[role=gridcell]").all_text_contents()]
            assert any("gpt3-175b-verifier" == c for c in cells)
            save(page, tmp_path, "leaderboard.png")
            page.goto(server + "?tag=wmt", timeout=120_000)                # the grid draws visible columns only
            page.wait_for_selector(READY, timeout=120_000)
            grid = page.locator("[data-testid=stDataFrame]").first
            grid.locator("[role=row]").nth(2).wait_for(state="attached", timeout=120_000)
            cells = [c.strip() for c in grid.locator("[role=gridcell]").all_text_contents()]
            nums = [float(c) for c in cells if c.replace(".", "", 1).isdigit()]
            assert any(abs(x - bleu["value"]) < 1e-6 for x in nums) and want_ci in cells, " | ".join(cells)
            page.goto(server, timeout=120_000)
            page.wait_for_selector(READY, timeout=120_000)

            page.locator("[data-testid=stSidebar] label").filter(has_text="Compare").first.click()
            page.get_by_role("heading", name="Compare two runs").wait_for(timeout=120_000)
            page.wait_for_selector(READY, timeout=180_000)
            verdict = page.locator("[data-testid=stAlert]").first
            verdict.wait_for(timeout=180_000)
            assert verdict.inner_text().startswith("regression (the CLI would exit 1)")
            table = page.locator("[data-testid=stDataFrame]").first
            table.locator("[role=row]").nth(1).wait_for(state="attached", timeout=60_000)
            assert table.locator("[role=row]").count() == 4                  # WMT: BLEU, chrF, TER
            verdicts = [c.strip() for c in table.locator("[role=gridcell]").all_text_contents()]
            assert verdicts.count("regressed") == 3, verdicts
            save(page, tmp_path, "compare.png")
        finally:
            browser.close()
