"""Pages that stay readable at many models (#51 item 3), through streamlit's AppTest on 60 synthetic
models (``_dashboard_records.many_models``): the grid, the heatmap and the bars show one page of N rows
(25 by default) with the global ranks, a search narrows the rows, a pinned model stays on every page,
the Task view's chart and table are bounded the same way, a link reproduces a page, and paging,
searching or pinning reuses the cached board instead of ranking again."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
pytest.importorskip("altair")
import streamlit as st  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

import _dashboard_records as recs  # noqa: E402
from evalkit.dashboards import board, charts, rowpages, tables  # noqa: E402
from evalkit.dashboards.store import ResultsStore  # noqa: E402

APP = Path(__file__).resolve().parents[2] / "dashboards" / "app.py"
N_MODELS = 60


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    return recs.many_models(tmp_path_factory.mktemp("pages") / "results", N_MODELS)


@pytest.fixture(scope="module")
def full(results) -> board.Leaderboard:
    """The whole board as the page builds it by default (every column, overall, best first)."""
    s = ResultsStore(results)
    s.refresh()
    return board.build_leaderboard(tables.filter_cells(s.cells(), tables.Filters()))


def start(monkeypatch, results, **params) -> AppTest:
    monkeypatch.setenv("EVALKIT_DASHBOARD_RESULTS", str(results))
    monkeypatch.setenv("EVALKIT_DASHBOARD_BATTLES", "")
    at = AppTest.from_file(str(APP), default_timeout=180)
    at.query_params.update(params)
    return rerun(at)


def rerun(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def grid(at):
    return next(df.value for df in at.dataframe if "#" in df.value.columns)


def rows_caption(at) -> str:
    return next(c.value for c in at.caption if c.value.startswith(("rows ", "no rows")))


def spec(at, index: int) -> dict:
    return json.loads(at.get("vega_lite_chart")[index].proto.spec)


def y_sort(chart: dict) -> list:
    return chart["layer"][0]["encoding"]["y"]["sort"]


def test_the_grid_heatmap_and_bars_show_one_page_with_global_ranks(monkeypatch, results, full):
    at = start(monkeypatch, results)
    order, ranks = list(full.display["model"]), list(full.grid["rank"])
    g = grid(at)
    assert list(g["model"]) == order[:25] and rows_caption(at) == "rows 1–25 of 60"
    heat, bars = spec(at, 0), spec(at, 1)
    assert y_sort(heat) == order[:25] and heat["height"] == charts.plot_height(25)
    assert sorted(y_sort(bars)) == sorted(order[:25]) and bars["height"] == charts.plot_height(25)
    text = next(df.value for df in at.dataframe if "rank" in df.value.columns)         # the cells as text
    assert list(text["model"]) == order[:25]

    at.selectbox(key="lb_page").set_value(2)
    rerun(at)
    g = grid(at)
    assert list(g["model"]) == order[25:50] and list(g["#"]) == ranks[25:50]          # global, not 1..25
    assert rows_caption(at) == "rows 26–50 of 60" and at.query_params["page"] == "2"
    assert y_sort(spec(at, 0)) == order[25:50]
    prov = next(df.value for df in at.dataframe if "identity_hash" in df.value.columns)
    assert set(prov["model"]) == set(order[25:50])                                     # provenance of the page

    at.button(key="lb_page_forward").click()
    rerun(at)
    assert list(grid(at)["model"]) == order[50:] and rows_caption(at) == "rows 51–60 of 60"
    assert at.button(key="lb_page_forward").disabled
    at.selectbox(key="lb_rows").set_value(10)                                          # back to page 1
    rerun(at)
    assert list(grid(at)["model"]) == order[:10] and rows_caption(at) == "rows 1–10 of 60"
    assert at.selectbox(key="lb_page").options[-1] == "rows 51–60"


def test_search_and_a_pinned_model_on_every_page(monkeypatch, results, full):
    at = start(monkeypatch, results)
    order, ranks = list(full.display["model"]), list(full.grid["rank"])
    at.text_input(key="lb_search").input("INSTRUCT-V2.")                               # any case
    rerun(at)
    hits = [m for m in order if "instruct-v2." in m]
    assert list(grid(at)["model"]) == hits[:25] and rows_caption(at) == f"rows 1–{len(hits)} of " \
        f"{len(hits)} matching 'INSTRUCT-V2.' (of 60)"
    at.text_input(key="lb_search").input("no such model")
    rerun(at)
    assert len(grid(at)) == 0 and rows_caption(at) == "no rows matching 'no such model'"

    last = order[-1]
    at.text_input(key="lb_search").input("")
    at.multiselect(key="lb_pins").set_value([last])
    rerun(at)
    for page in (1, 2, 3):
        at.selectbox(key="lb_page").set_value(page)
        rerun(at)
        g = grid(at)
        assert g["model"].iloc[0] == last and g[rowpages.PIN].iloc[0] == rowpages.PIN
        assert g["#"].iloc[0] == ranks[-1] and list(g["model"]).count(last) == 1
        assert y_sort(spec(at, 0))[0] == last and len(y_sort(spec(at, 0))) <= 26
    assert len(grid(at)) == 10 and list(grid(at)["model"][1:]) == order[50:59]   # page 3: pin + 51-59
    at.text_input(key="lb_search").input("instruct-v0.")
    rerun(at)
    assert grid(at)["model"].iloc[0] == last and at.query_params["pin"] == last


def test_a_link_reproduces_the_rows_shown(monkeypatch, results, full):
    order = list(full.display["model"])
    at = start(monkeypatch, results, rows="10", page="3", search="family-", pin=order[0])
    assert list(grid(at)["model"]) == [order[0]] + order[20:30]
    assert rows_caption(at) == "rows 21–30 of 60 matching 'family-' · 1 pinned 📌 on top"
    at = start(monkeypatch, results, rows="7", page="x")                    # not a choice: the defaults
    assert len(grid(at)) == 25


def test_paging_searching_and_pinning_reuse_the_cached_board(monkeypatch, results):
    calls = []
    real = board.build_leaderboard
    monkeypatch.setattr(board, "build_leaderboard", lambda *a, **k: calls.append(1) or real(*a, **k))
    st.cache_data.clear()
    at = start(monkeypatch, results)
    at.selectbox(key="lb_page").set_value(2)
    rerun(at)
    at.text_input(key="lb_search").input("v1.")
    rerun(at)
    at.multiselect(key="lb_pins").set_value([grid(at)["model"].iloc[0]])
    rerun(at)
    at.sidebar.radio(key="view").set_value("Task")
    rerun(at)
    at.sidebar.radio(key="view").set_value("Leaderboard")
    rerun(at)
    assert len(calls) == 1
    at.radio(key="lb_weight").set_value("items")                           # a setting that changes the board
    rerun(at)
    assert len(calls) == 2


def test_task_view_chart_and_table_are_one_page(monkeypatch, results):
    s = ResultsStore(results)
    s.refresh()
    cells = s.cells()
    col = cells[cells["task"] == "mmlu_like"]["col"].iloc[0]
    at = start(monkeypatch, results, view="Task", task=col)
    chart = spec(at, 0)
    assert len(y_sort(chart)) == 25 and chart["height"] == charts.plot_height(25)
    table = next(df.value for df in at.dataframe if "ci_low" in df.value.columns)
    assert len(table) == 25 and list(table["rank"]) == sorted(table["rank"])
    assert set(table["model"]) == set(y_sort(chart))
    breakdown = next(df.value for df in at.dataframe if df.value.index.name == "group")
    assert set(breakdown.columns) == set(table["model"])                    # the page's models only
    at.selectbox(key="task_page").set_value(3)
    rerun(at)
    table = next(df.value for df in at.dataframe if "ci_low" in df.value.columns)
    assert len(table) == 10 and rows_caption(at) == "rows 51–60 of 60"
    assert at.query_params["task_page"] == "3"


def test_window_rules():
    names = [f"m{i}" for i in range(1987)]
    w = rowpages.window(names, 25, 2)
    assert w.rows == list(range(25, 50)) and w.caption() == "rows 26–50 of 1,987"
    assert rowpages.window(names, 25, 999).page == 80 and rowpages.window(names, 25, 0).page == 1
    w = rowpages.window(names, 10, 1, "M19", pinned=["m3", "m1986"])
    assert w.rows[:2] == [3, 1986] and w.pinned == [3, 1986] and w.matches == 1 + 10 + 87
    assert w.rows[2:] == [19] + list(range(190, 199))
    w = rowpages.window(names, 10, 1, pinned=["m3"])                         # a pin on its page: once
    assert w.rows == [3, 0, 1, 2, 4, 5, 6, 7, 8, 9]
    w = rowpages.window(["a · 1", "a · 2", "b · 3"], 10, 1, pinned=["a"], keys=["a", "a", "b"])
    assert w.pinned == [0, 1]
    assert rowpages.window([], 25, 1).caption() == "no rows" and rowpages.page_label(2, 25, 60) == "rows 26–50"
