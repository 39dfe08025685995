"""The page height stays bounded at many models (#51 item 3), in the system Chromium at 1400 px on
``evalkit leaderboard`` over 60 synthetic models (``_dashboard_records.many_models``): the Leaderboard
and Task pages show 25 rows by default and stay under a fixed height (before paging they were
6,456 px and 11,619 px tall), and the next page of the grid holds rows 26-50."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

import _dashboard_records as recs

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import dashboard_screenshots as shots  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.server]

LEADERBOARD_MAX_PX = 6000
TASK_MAX_PX = 7000         # the 57-subject breakdown heatmap alone is ~1,300 px, whatever the models
HEIGHT = ("() => Math.max(...[...document.querySelectorAll('[data-testid=stMain], "
          "[data-testid=stMainBlockContainer]')].map(e => e.scrollHeight))")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not Path(shots.CHROMIUM).exists():
        pytest.skip(f"{shots.CHROMIUM} is missing (apt-get install chromium; scripts/install.sh does it)")
    pytest.importorskip("playwright.sync_api", reason="Playwright for Python is missing (pip install playwright)")
    results = recs.many_models(tmp_path_factory.mktemp("pages") / "results", 60)
    srv = shots.Server(results, tmp_path_factory.mktemp("log") / "streamlit.log")
    yield srv
    srv.close()


def settled_height(page, timeout: float = 30.0) -> int:
    """The page's scroll height once it stops changing (Vega draws after the script has finished)."""
    deadline, last = time.time() + timeout, -1
    while time.time() < deadline:
        page.wait_for_timeout(700)
        now = page.evaluate(HEIGHT)
        if now == last:
            return now
        last = now
    return last


def rows_text(page) -> str:
    return " ".join(page.locator("[data-testid=stCaptionContainer]").all_inner_texts())


def test_page_height_is_bounded_at_60_models(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shots.CHROMIUM, args=shots.ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            shots.open_view(page, server.url)
            page.locator("[data-testid=stVegaLiteChart] g.mark-rect path").first.wait_for(timeout=60_000)
            assert "rows 1–25 of 60" in rows_text(page)
            grid = page.locator("[data-testid=stDataFrame]").first
            grid.locator("[role=row]").nth(25).wait_for(state="attached", timeout=60_000)
            assert grid.locator("[role=row]").count() == 26                      # header + 25 models
            height = settled_height(page)
            assert 1500 < height < LEADERBOARD_MAX_PX, height

            page.get_by_role("button", name="next ▶").first.click()
            page.get_by_text("rows 26–50 of 60").first.wait_for(timeout=60_000)
            shots.wait_ready(page)
            assert settled_height(page) < LEADERBOARD_MAX_PX

            shots.open_view(page, server.url, view="Task")
            page.locator("[data-testid=stVegaLiteChart] g.mark-rect path").first.wait_for(timeout=60_000)
            assert "rows 1–25 of 60" in rows_text(page)
            height = settled_height(page)
            assert 1500 < height < TASK_MAX_PX, height
            assert page.locator("[data-testid=stException]").count() == 0
        finally:
            browser.close()
