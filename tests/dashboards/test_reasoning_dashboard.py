"""The leaderboard's task page shows the budget shares of a reasoning run beside its score, read from
the run record a real `evalkit run` wrote against the reasoning test server."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
pytest.importorskip("altair")
from streamlit.testing.v1 import AppTest  # noqa: E402

from tests._reasoning_server import ReasoningServer  # noqa: E402
from tests.run.test_reasoning_server import TABLE, gsm, run  # noqa: E402,F401 (gsm: the fixture)

APP = Path(__file__).resolve().parents[2] / "dashboards" / "app.py"


def test_task_page_shows_budget_shares(gsm, tmp_path, monkeypatch):  # noqa: F811
    with ReasoningServer(TABLE, form="markers") as srv:
        r = run(srv, gsm, tmp_path)
    assert r.returncode == 0, r.stderr
    monkeypatch.setenv("EVALKIT_DASHBOARD_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("EVALKIT_DASHBOARD_BATTLES", "")
    at = AppTest.from_file(str(APP), default_timeout=180).run()
    at.sidebar.radio(key="view").set_value("Task")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    table = next(d.value for d in at.dataframe if "hit max_tokens" in d.value.columns)
    row = table.iloc[0]
    assert row["hit max_tokens"] == pytest.approx(1 / 3) and row["unclosed trace"] == pytest.approx(1 / 3)
    assert row["no answer"] == pytest.approx(1 / 3) and row["value"] == pytest.approx(2 / 3)
