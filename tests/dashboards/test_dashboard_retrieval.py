"""The leaderboard's Retrieval view (AppTest, headless) on two real retrieval run records written by
`evalkit score --task retrieval`: metric@k curves with CIs and the figures table."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
pytest.importorskip("altair")
from streamlit.testing.v1 import AppTest  # noqa: E402

from evalkit.retrieval.scoring import score_saved_run  # noqa: E402

APP = Path(__file__).resolve().parents[2] / "dashboards" / "app.py"
QRELS = "q1 0 a 2\nq1 0 b 1\nq2 0 x 1\nq3 0 y 1\n"
RUNS = {"bm25": "q1 Q0 a 1 2 s\nq1 Q0 b 2 1 s\nq2 Q0 z 1 3 s\nq2 Q0 x 2 2 s\n",
        "dense": "q1 Q0 c 1 2 s\nq1 Q0 a 2 1 s\nq2 Q0 x 1 3 s\nq3 Q0 y 1 1 s\n"}


@pytest.fixture
def results(tmp_path):
    (tmp_path / "qrels.txt").write_text(QRELS)
    for name, text in RUNS.items():
        (tmp_path / f"{name}.trec").write_text(text)
        score_saved_run("retrieval", tmp_path / f"{name}.trec", tmp_path / "qrels.txt", {"k": "1+2+10"},
                        name=name, output_dir=str(tmp_path / "res"))
    return tmp_path / "res"


def test_retrieval_view_shows_curves_and_table(monkeypatch, results):
    from evalkit.dashboards.store import ResultsStore
    from evalkit.dashboards.view_retrieval import curve_frame
    store = ResultsStore(results)
    store.refresh()
    frame = curve_frame(store.cells())
    hit = frame[frame["family"] == "hit"]
    assert sorted(set(hit["k"])) == [1, 2, 10] and set(hit["label"]) == {"bm25", "dense"}
    assert (hit["ci_low"] <= hit["value"]).all() and (hit["value"] <= hit["ci_high"]).all()
    monkeypatch.setenv("EVALKIT_DASHBOARD_RESULTS", str(results))
    monkeypatch.setenv("EVALKIT_DASHBOARD_BATTLES", "")
    at = AppTest.from_file(str(APP), default_timeout=180).run()
    assert not at.exception
    at.sidebar.radio[0].set_value("Retrieval").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(t.value == "Retrieval" for t in at.title)
    table = at.dataframe[0].value
    assert list(table.columns) == ["label", "hit@1", "hit@2", "hit@10"]
    row = table.set_index("label").loc["dense"]
    assert row["hit@1"] == pytest.approx(2 / 3) and row["hit@10"] == pytest.approx(1.0)
    at.radio(key="retrieval_family").set_value("ndcg").run()
    assert not at.exception and list(at.dataframe[0].value.columns)[1] == "ndcg@1"
