"""What a user relies on, in the system Chromium at 1400 and 800 px, on one shared ``evalkit leaderboard``
server (real records: the fast set plus 16 models with long names, one samples file with a broken line):
every label of a 3-model and a 16-model chart is there, complete and distinct, and chart rows have room;
a deep link reproduces a view and Back/Forward move between views inside the app; a click on a heatmap
cell opens that model's samples of that task; a corrupted samples line is a warning naming the file and
line, never a traceback."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

import _dashboard_records as recs

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import dashboard_screenshots as shots  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.server]

WIDTHS = (1400, 800)
MIN_ROW_PX = 18            # vertical room per chart row (labels never overlap)
MIN_PLOT_PX = 80           # the smallest plot area
BROKEN_RUN, BROKEN_TASK, BROKEN_LINE = "many-05", "gsm8k_like", 2


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    out = recs.fast_records(tmp_path_factory.mktemp("dashboard"))
    root = tmp_path_factory.mktemp("views") / "results"
    import shutil

    shutil.copytree(out, root)
    recs.many_models(root)
    recs.grpo_records(root)
    recs.best_of_n_records(root)
    path = root / BROKEN_RUN / f"samples_{BROKEN_TASK}.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[BROKEN_LINE - 1] = lines[BROKEN_LINE - 1][:25] + "\n"                  # a truncated write
    path.write_text("".join(lines), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def server(results, tmp_path_factory):
    if not Path(shots.CHROMIUM).exists():
        pytest.skip(f"{shots.CHROMIUM} is missing (apt-get install chromium; scripts/install.sh does it)")
    pytest.importorskip("playwright.sync_api", reason="Playwright for Python is missing (pip install playwright)")
    srv = shots.Server(results, tmp_path_factory.mktemp("log") / "streamlit.log")
    yield srv
    srv.close()


@pytest.fixture(scope="module")
def browser(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=shots.CHROMIUM, args=shots.ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    p = ctx.new_page()
    yield p
    ctx.close()


def store(results):
    from evalkit.dashboards.store import ResultsStore

    s = ResultsStore(results)
    s.refresh()
    return s


def col_of(results, task: str, n_docs=None) -> str:
    cells = store(results).cells()
    sel = cells[cells["task"] == task]
    if n_docs is not None:
        sel = sel[sel["n_docs"] == n_docs]
    return sel["col"].iloc[0]


def y_labels(chart) -> list[dict]:
    """The y-axis labels of a Vega chart: text and vertical position."""
    return chart.evaluate("""el => {
        const axes = [...el.querySelectorAll('g.role-axis')].filter(
            ax => (ax.getAttribute('aria-label') || '').startsWith('Y-axis'));
        const out = [];
        for (const ax of axes) {
            for (const t of ax.querySelectorAll('g.role-axis-label text')) {
                const box = t.getBoundingClientRect();
                out.push({text: t.textContent, y: box.y, h: box.height});
            }
        }
        return out;
    }""")


def settle(read, ok, timeout: float = 60.0):
    """``read()`` again until ``ok`` holds for its value or ``timeout`` passes (then the last value):
    Vega draws its marks after the script has finished, later on a busy machine."""
    deadline = time.time() + timeout
    value = read()
    while not ok(value) and time.time() < deadline:
        time.sleep(0.2)
        value = read()
    return value


def check_chart(chart, names: list[str]) -> None:
    labels = settle(lambda: y_labels(chart), lambda labs: sorted(lab["text"] for lab in labs) == sorted(names))
    texts = [lab["text"] for lab in labels]
    assert sorted(texts) == sorted(names), texts                 # every label, complete, none twice
    ys = sorted(lab["y"] for lab in labels)
    gaps = [b - a for a, b in zip(ys, ys[1:])]
    assert min(gaps) >= MIN_ROW_PX, gaps                          # rows have room, labels never overlap
    assert ys[-1] - ys[0] + gaps[0] >= max(MIN_PLOT_PX, MIN_ROW_PX * len(names))


def alerts(page) -> str:
    return " ".join(page.locator("[data-testid=stAlert]").all_inner_texts())


def codes(page) -> list[str]:
    """The texts of the page's code blocks (questions, answers), once rendered."""
    page.locator("[data-testid=stCode] pre").first.wait_for(timeout=60_000)
    return page.locator("[data-testid=stCode] pre").all_text_contents()


def no_traceback(page) -> None:
    assert page.locator("[data-testid=stException]").count() == 0
    assert "Traceback" not in page.inner_text("body")


@pytest.mark.parametrize("width", WIDTHS)
def test_chart_labels_complete_distinct_and_roomy(page, server, results, width):
    page.set_viewport_size({"width": width, "height": 900})
    gpt3 = ["gpt3-6b-finetuned", "gpt3-175b-finetuned", "gpt3-175b-verifier"]
    shots.open_view(page, server.url, view="Task", task=col_of(results, "gsm8k", 50))
    check_chart(page.locator("[data-testid=stVegaLiteChart]").first, gpt3)
    many = [f"example-org/long-model-family-{7 + i}b-instruct-v{i % 3}.{i}" for i in range(16)]
    shots.open_view(page, server.url, view="Task", task=col_of(results, "mmlu_like"))
    charts = page.locator("[data-testid=stVegaLiteChart]")
    check_chart(charts.first, many)                              # bars with CI whiskers, 16 models
    subjects = charts.nth(1)                                      # the 57-subject breakdown heatmap
    assert len(settle(lambda: {lab["text"] for lab in y_labels(subjects)}, lambda t: len(t) >= 57)) == 57
    no_traceback(page)


def test_deep_link_reproduces_a_view_and_back_forward_work(page, server, results):
    s = store(results)
    cells = s.cells()
    run = cells[(cells["model"] == "gpt3-175b-verifier") & (cells["n_docs"] == 50)]["run_id"].iloc[0]
    col = col_of(results, "gsm8k", 50)
    shots.open_view(page, server.url, view="Task", task=col, metric="exact_match_flexible", run=run, doc="7")
    assert page.get_by_role("heading", name="Task", exact=True).count() == 1
    assert page.get_by_role("heading", name="doc 7", exact=True).count() == 1
    sols = [json.loads(line) for line in open(recs.SHARED / "gsm8k" / "example_model_solutions.jsonl")][:50]
    want = sols[7]["175b_verification"]["solution"].strip().splitlines()[0]
    shown = settle(lambda: codes(page), lambda cs: any(want in c for c in cs))   # code blocks draw one by one
    assert any(want in c for c in shown), shown                  # that model's answer to that item
    title = settle(lambda: page.locator("[data-testid=stVegaLiteChart]").first.text_content() or "",
                   lambda t: "(95% CI)" in t)
    assert "exact_match_flexible ↑ (95% CI)" in title, title     # the metric from the link

    shots.open_view(page, server.url)
    assert page.get_by_role("heading", name="Leaderboard").count() == 1
    page.locator("[data-testid=stSidebar] label").filter(has_text="Arena").first.click()
    page.get_by_role("heading", name="Arena").wait_for(timeout=60_000)
    shots.wait_ready(page)
    assert parse_qs(urlparse(page.url).query)["view"] == ["Arena"]
    page.go_back()
    page.get_by_role("heading", name="Leaderboard").wait_for(timeout=60_000)
    assert urlparse(page.url).port == server.port                # still in the app
    page.go_forward()
    page.get_by_role("heading", name="Arena").wait_for(timeout=60_000)
    no_traceback(page)


def test_click_on_a_heatmap_cell_opens_that_models_samples(page, server, results):
    shots.open_view(page, server.url, tag="gpt3")
    heat = page.locator("[data-testid=stVegaLiteChart]").first
    # Vega draws its marks after the script has finished: wait for the cell, not a fixed time
    target = heat.locator('g.mark-rect path[aria-label*="model: gpt3-175b-finetuned;"][aria-label*="50 docs"]').first
    target.wait_for(timeout=60_000)
    target.click()
    page.get_by_role("heading", name="Task", exact=True).wait_for(timeout=60_000)
    shots.wait_ready(page)
    q = parse_qs(urlparse(page.url).query)
    assert q["view"] == ["Task"] and q["task"] == [col_of(results, "gsm8k", 50)]
    cells = store(results).cells()
    assert q["run"] == [cells[(cells["model"] == "gpt3-175b-finetuned") & (cells["n_docs"] == 50)]["run_id"].iloc[0]]
    sols = [json.loads(line) for line in open(recs.SHARED / "gsm8k" / "example_model_solutions.jsonl")][:50]
    first = sols[0]["175b_finetuning"]["solution"].strip().splitlines()[0]
    shown = settle(lambda: codes(page), lambda cs: any(first in c for c in cs))
    assert any(first in c for c in shown), shown                 # the first sample of that model, in full
    no_traceback(page)


def test_corrupted_samples_line_is_a_warning_not_a_traceback(page, server, results):
    shots.open_view(page, server.url, view="Task", task=col_of(results, BROKEN_TASK), run=BROKEN_RUN)
    text = alerts(page)
    assert f"{BROKEN_RUN}/samples_{BROKEN_TASK}.jsonl line {BROKEN_LINE}: not JSON" in text, text
    # the other lines still load (the widget can appear a moment after the script state reads idle)
    page.locator('[data-testid=stNumberInputField][aria-label="Page (of 1, 2 samples)"]').wait_for(timeout=60_000)
    no_traceback(page)


def whole_records(results) -> list:
    """Every run's whole record (the store's ``records()`` are summaries without GRPO and best-of-N figures)."""
    s = store(results)
    return [s.record(run_id) for run_id in s.records()]


def test_grpo_group_figures_and_passk_curves(page, server, results):
    shots.open_view(page, server.url, view="Task", task=col_of(results, "gsm8k", 12), tag="grpo")
    page.get_by_role("heading", name="GRPO groups").wait_for(timeout=60_000)
    chart = page.locator("[data-testid=stVegaLiteChart]").filter(has_text="pass@k (95% CI)")
    chart.wait_for(timeout=60_000)
    for model in ("grpo-policy-a", "grpo-policy-b"):                # a curve per model, k = 1..4 on the axis
        paths = chart.locator(f'path[aria-label*="model: {model}"]')
        assert settle(paths.count, lambda c: c >= 4) >= 4
    from evalkit.dashboards.tables import cell_text
    (run,) = [r for r in whole_records(results) if r.run.model.name == "grpo-policy-a"]
    want = cell_text(*(run.tasks["gsm8k"]["grpo"]["figures"]["pass@1"][k] for k in ("value", "ci_low", "ci_high", "n")))
    grid = page.locator(".st-key-grpo_section [data-testid=stDataFrame]")
    grid.locator("[role=row]").nth(2).wait_for(state="attached", timeout=60_000)
    assert grid.locator("[role=row]").count() == 3                      # header + one row per model
    cells = [c.strip() for c in grid.locator("[role=gridcell]").all_text_contents()]
    assert "grpo-policy-a" in cells and want in cells, cells
    no_traceback(page)


def test_best_of_n_curves_per_model_and_rm_auroc(page, server, results):
    """Runs with best-of-N figures: per run (model and reward model) a chart with a line per method over
    N = 1, 2, 4 (CI bands), and the table of the figures at full N with rm_auroc, a row per run (two reward
    models on one model are two rows), as the records say and as worked out by hand (recs.best_of_n_problems)."""
    from evalkit.dashboards.tables import cell_text
    runs = {(r.run.model.name, r.run.reward_model["name"]): r for r in whole_records(results)
            if r.run.model.name.startswith("bon-")}
    assert len(runs) == 3
    figs = {key: r.tasks["gsm8k"]["best_of_n"] for key, r in runs.items()}
    good, bad = figs["bon-policy-good-rm", "fixture-rm"], figs["bon-policy-bad-rm", "fixture-rm"]
    assert good["ns"] == [1, 2, 4] and good["metrics"]["oracle@4"]["value"] == 1.0
    assert good["metrics"]["rm_auroc"]["value"] == 1.0 and bad["metrics"]["rm_auroc"]["value"] == 0.0
    assert good["metrics"]["rm_best_of@4"]["value"] == 1.0 and bad["metrics"]["rm_best_of@4"]["value"] == 0.0
    assert abs(good["metrics"]["maj@4"]["value"] - 1 / 3) < 1e-12 and abs(good["curves"]["pass@1"][-1] - 1 / 3) < 1e-12
    assert figs["bon-policy-good-rm", "fixture-rm-2"]["metrics"]["rm_auroc"]["value"] == 0.0

    shots.open_view(page, server.url, view="Task", task=col_of(results, "gsm8k", 21), tag="bon")
    page.get_by_role("heading", name="Best-of-N").wait_for(timeout=60_000)
    section = page.locator(".st-key-best_of_n_section")
    for model, rm in runs:
        chart = section.locator("[data-testid=stVegaLiteChart]").filter(
            has_text=f"{model} (reward model {rm}): best-of-N accuracy")
        chart.wait_for(timeout=60_000)
        for method in ("pass@1 (mean", "maj@N", "oracle@N", "rm_best_of@N"):   # a line per method, a point per N
            paths = chart.locator(f'path[aria-label*="method: {method}"]')
            assert settle(paths.count, lambda c: c >= 3) >= 3, (model, rm, method)
    grid = section.locator("[data-testid=stDataFrame]")
    grid.locator("[role=row]").nth(3).wait_for(state="attached", timeout=60_000)
    assert grid.locator("[role=row]").count() == 4                      # header + one row per run
    rows = [[c.strip() for c in row.locator("[role=gridcell]").all_text_contents()]
            for row in grid.locator("[role=row]").all()[1:]]
    for (model, rm), b in figs.items():                                # each run's row: its model, RM and figures
        want = [cell_text(b["metrics"][f]["value"], b["metrics"][f]["ci_low"], b["metrics"][f]["ci_high"],
                          b["metrics"][f]["n"]) for f in ("rm_auroc", "rm_best_of@4", "oracle@4")]
        assert any(r[:2] == [model, rm] and all(w in r for w in want) for r in rows), (model, rm, rows)
    no_traceback(page)


def test_click_on_a_grid_cell_opens_that_models_samples(page, server, results):
    shots.open_view(page, server.url, tag="wmt")                 # 2 rows; the translation value and CI on the right
    grid = page.locator("[data-testid=stDataFrame]").first
    box = grid.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.8, box["y"] + 35 + 17)       # first data row (35 px rows)
    page.get_by_role("heading", name="Task", exact=True).wait_for(timeout=60_000)
    shots.wait_ready(page)
    q = parse_qs(urlparse(page.url).query)
    cells = store(results).cells()
    uedin = cells[cells["model"] == "newstest2017.uedin-nmt.4722"]["run_id"].iloc[0]
    assert q["task"] == [col_of(results, "translation")] and q["run"] == [uedin]
    no_traceback(page)
