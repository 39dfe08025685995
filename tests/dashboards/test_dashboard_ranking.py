"""The overall ranking is honest: models are ranked only among models covering the same overall columns,
with a bootstrap CI, the same '=' rule as every column, optional weighting by items; on the page
(AppTest) and in ``board.build_leaderboard``."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

import _dashboard_records as recs  # noqa: E402
from evalkit.dashboards import board, ranking, tables  # noqa: E402
from evalkit.dashboards.labels import col_key  # noqa: E402
from evalkit.dashboards.store import ResultsStore  # noqa: E402

APP = Path(__file__).resolve().parents[2] / "dashboards" / "app.py"
WIDE = ["wide-1", "wide-2", "wide-3"]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    return recs.coverage_fixture(tmp_path_factory.mktemp("coverage"))


def naive_mean_win_rate(lb) -> pd.Series:
    """HELM's mean win rate over every column a model has (what the old overall did)."""
    wins = pd.DataFrame({c: tables.win_rates(lb.values[c]) for c in lb.column_labels})
    return wins.mean(axis=1, skipna=True)


def test_one_task_model_is_ranked_only_among_equal_coverage(results):
    s = ResultsStore(results)
    s.refresh()
    lb = board.build_leaderboard(tables.filter_cells(s.cells(), tables.Filters()))
    label = dict(zip(lb.entries, lb.display["model"]))
    naive = naive_mean_win_rate(lb).rename(index=label).sort_values(ascending=False)
    assert naive.index[0] == "solo-a"                       # the fixture is the trap the issue describes
    assert [lb.column_labels[c] for c in lb.overall_cols] == ["task_a", "task_b", "task_c"]
    d = lb.display.set_index("model")
    assert list(lb.display["model"][:3]) == WIDE            # full coverage first, best first
    assert list(d.loc[WIDE, "coverage"]) == ["3/3"] * 3 and list(d.loc[["solo-a", "solo-b"], "coverage"]) == ["1/3"] * 2
    assert list(lb.display["rank"][:3]) == ["1", "2", "3"]  # CIs (±0.02 per cell) separate them
    ov = lb.overall.rename(index=label)
    assert ov.loc["wide-1", "score"] == 1.0 and ov.loc["wide-3", "score"] == 0.0
    assert ov.loc["solo-a", "group"] == ov.loc["solo-b", "group"] != ov.loc["wide-1", "group"]
    assert ov.loc["solo-a", "rank"] == 1 and ov.loc["solo-b", "rank"] == 2   # ranked among themselves only
    assert (ov.loc[WIDE, "ci_low"] <= ov.loc[WIDE, "score"]).all()
    assert (ov.loc[WIDE, "score"] <= ov.loc[WIDE, "ci_high"]).all()


def test_ties_share_a_rank_by_the_column_rule_and_weights_count():
    idx = ["a", "b", "c"]
    v = pd.DataFrame({"x": [0.50, 0.49, 0.10], "y": [0.30, 0.31, 0.90]}, index=idx)
    wide_lo, wide_hi = v - 0.2, v + 0.2
    tied = ranking.overall_ranking(v, wide_lo, wide_hi, {}, ["x", "y"], rounds=300)
    assert tied.loc["a", "rank"] == tied.loc["b", "rank"] == 1 and tied["shared"]["a"]      # overlapping CIs
    assert tied.loc["a", "score"] == tied.loc["b", "score"] == 0.5
    # weighting: x has 1,000 items and y 3, so x decides; equal weights give a and b the same score
    heavy = ranking.overall_ranking(v, v - 0.001, v + 0.001, {}, ["x", "y"], {"x": 1000, "y": 3}, rounds=300)
    assert heavy.loc["a", "score"] > heavy.loc["b", "score"] > heavy.loc["c", "score"]
    assert list(heavy["rank"]) == [1, 2, 3]
    assert ranking.shared_columns(pd.DataFrame({"x": [1, 2, 3], "y": [1, np.nan, np.nan]}, index=idx)) == ["x"]


def test_page_shows_coverage_groups(monkeypatch, results):
    monkeypatch.setenv("EVALKIT_DASHBOARD_RESULTS", str(results))
    monkeypatch.setenv("EVALKIT_DASHBOARD_BATTLES", "")
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    assert not at.exception, [e.value for e in at.exception]
    grid = next(d.value for d in at.dataframe if "#" in d.value.columns)
    assert list(grid["model"]) == WIDE + ["solo-a", "solo-b"]
    assert list(grid["coverage"]) == ["3/3"] * 3 + ["1/3"] * 2
    assert grid["overall"].iloc[0] == 1.0 and pd.isna(grid["overall"].iloc[3]) is False
    assert [c for c in grid.columns if c.endswith("↑")] == [f"task_{t} · acc ↑" for t in "abc"]
    assert str(grid["task_a · acc ↑"].dtype) == "float64"                    # numeric: sorts as numbers
    captions = " ".join(c.value for c in at.caption)
    assert "cover the same overall columns" in captions and "overlaps its group leader" in captions
    at.radio(key="lb_weight").set_value("items")
    at.multiselect(key="lb_overall").set_value([col_key("task_a", "1", "p-task_a")])
    at.run()
    grid = next(d.value for d in at.dataframe if "#" in d.value.columns)
    assert list(grid["model"][:2]) == ["solo-a", "solo-b"] and set(grid["coverage"]) == {"1/1"}   # all cover task_a


def test_leaderboard_state_survives_switching_views(monkeypatch, results):
    monkeypatch.setenv("EVALKIT_DASHBOARD_RESULTS", str(results))
    monkeypatch.setenv("EVALKIT_DASHBOARD_BATTLES", "")
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    a, b = col_key("task_a", "1", "p-task_a"), col_key("task_b", "1", "p-task_b")
    at.multiselect(key="lb_columns").set_value([a, b])
    at.selectbox(key="lb_sort").set_value(b)
    at.toggle(key="lb_best_first").set_value(False)
    at.run()
    at.sidebar.radio(key="view").set_value("Task")
    at.run()
    assert at.title[0].value == "Task"
    at.sidebar.radio(key="view").set_value("Leaderboard")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.multiselect(key="lb_columns").value == [a, b] and at.selectbox(key="lb_sort").value == b
    grid = next(d.value for d in at.dataframe if "#" in d.value.columns)
    assert list(grid["model"][:3]) == ["wide-3", "wide-2", "wide-1"]       # worst first on task_b, kept
