"""Bad records and bad sample lines never reach the page as a traceback (AppTest, headless): a broken
``run.json`` is skipped with a warning naming it, a samples line that is not JSON is skipped with a warning
naming file and line, and a comparison that must read that file says why it cannot be computed."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

import _dashboard_records as recs  # noqa: E402
from evalkit.dashboards import samples as dsamples  # noqa: E402
from evalkit.dashboards.labels import col_key  # noqa: E402

APP = Path(__file__).resolve().parents[2] / "dashboards" / "app.py"


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    root = recs.coverage_fixture(tmp_path_factory.mktemp("bad") / "results")
    (root / "cov-wide-2" / "samples_task_a.jsonl").write_text(
        (root / "cov-wide-2" / "samples_task_a.jsonl").read_text().replace('"doc_id": "1"', '"doc_id": "1', 1))
    shutil.copytree(root / "cov-wide-3", root / "broken-record")
    (root / "broken-record" / "run.json").write_text('{"run_id": "x", "tasks": [1, 2')
    return root


def start(monkeypatch, results) -> AppTest:
    monkeypatch.setenv("EVALKIT_DASHBOARD_RESULTS", str(results))
    monkeypatch.setenv("EVALKIT_DASHBOARD_BATTLES", "")
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_broken_record_and_bad_sample_line_are_warnings(monkeypatch, results):
    at = start(monkeypatch, results)
    side = " ".join(w.value for w in at.sidebar.warning)
    assert "broken-record" in side and "run.json" in side
    at.sidebar.radio(key="view").set_value("Task")
    at.run()
    at.selectbox(key="task_col").set_value(col_key("task_a", "1", "p-task_a"))
    at.run()
    at.selectbox(key="sample_run").set_value("cov-wide-2")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    warned = " ".join(w.value for w in at.warning)
    assert "cov-wide-2/samples_task_a.jsonl line 2: not JSON" in warned, warned
    assert "3 samples" in at.number_input(key="sample_page").label       # the other three lines load


def test_comparison_that_needs_the_bad_file_says_why(monkeypatch, results):
    at = start(monkeypatch, results)
    at.sidebar.radio(key="view").set_value("Compare")
    at.run()
    at.selectbox(key="cmp_base").set_value("cov-wide-1")
    at.selectbox(key="cmp_cand").set_value("cov-wide-2")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    errors = " ".join(e.value for e in at.error)
    assert "cannot be computed" in errors and "samples_task_a.jsonl line 2" in errors, errors


def test_read_samples_names_file_and_line(tmp_path):
    p = tmp_path / "samples_x.jsonl"
    p.write_text('{"doc_id": "0"}\n[1, 2]\n{"doc_id": \n\n{"doc_id": "3"}\n', encoding="utf-8")
    rows, bad = dsamples.read_samples(p)
    assert [r["doc_id"] for r in rows] == ["0", "3"]
    assert bad[0].startswith(f"{p} line 2: a JSON list") and bad[1].startswith(f"{p} line 3: not JSON")
