"""Suite summaries on the leaderboard page: the leaderboard-v2 normalised scores of every run that
has them, best average first, with the average's CI bars (Streamlit's AppTest, headless)."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from evalkit.dashboards.store import ResultsStore  # noqa: E402
from evalkit.dashboards.suites import suite_rows  # noqa: E402
from evalkit.records import write_run  # noqa: E402
from evalkit.records.record import ModelInfo, Run, TaskEntry  # noqa: E402
from evalkit.scoring import leaderboard_v2 as lb  # noqa: E402
from evalkit.scoring.stats import mean_metric  # noqa: E402

APP = Path(__file__).resolve().parents[2] / "dashboards" / "app.py"


def bench_rows(p: float, n: int = 20) -> list:
    return [{"acc_norm": float(i < p * n), "n_choices": 4} for i in range(n)]


def record(results: Path, model: str, p: float, complete: bool) -> str:
    benches = {"bbh": lb.Bench("bbh", {"a": bench_rows(p), "b": bench_rows(p / 2)}),
               "gpqa": lb.Bench("gpqa", {"g": bench_rows(p)})}
    if complete:
        benches.update(
            ifeval=lb.Bench("ifeval", {"i": [{"prompt_level_strict_acc": 1.0, "inst_level_strict_acc": [True]}] * 4}),
            math_hard=lb.Bench("math_hard", {"m": [{"exact_match": 1.0}, {"exact_match": 0.0}]}),
            musr=lb.Bench("musr", {"x": bench_rows(p)}),
            mmlu_pro=lb.Bench("mmlu_pro", {"p": [dict(r, acc=r["acc_norm"]) for r in bench_rows(p)]}))
    figures = lb.summary(benches, n_replicates=100)
    run = Run(run_id=f"run-{model}", created_at="2026-12-04T00:00:00Z", model=ModelInfo(spec=f"hf:{model}", name=model),
              tasks={"lm-eval:leaderboard_gpqa": TaskEntry(n_docs=20,
                                                            metrics={"acc_norm": mean_metric([p] * 20)})},
              suite={"name": "leaderboard-v2", "leaderboard_v2": figures,
                     "missing": [k for k in lb.KINDS if k not in benches]})
    return str(write_run(results, run, {}))


def test_suite_figures_on_the_leaderboard(tmp_path, monkeypatch):
    results = tmp_path / "results"
    record(results, "strong", 0.8, True)
    record(results, "weak", 0.5, True)
    record(results, "partial", 0.9, False)
    store = ResultsStore(results)
    store.refresh()
    assert store.errors == {}
    frame = suite_rows(store)
    assert list(frame["model"]) == ["strong", "weak", "partial"]            # best average first, none last
    assert frame["average"].iloc[0].startswith(f"{frame['avg_value'].iloc[0]:.1f} [")
    assert frame["average"].iloc[2] == "–" and "ifeval" in frame["missing"].iloc[2]
    monkeypatch.setenv("EVALKIT_DASHBOARD_RESULTS", str(results))
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = next(d.value for d in at.dataframe if "mmlu_pro" in d.value.columns)
    assert list(shown["model"]) == ["strong", "weak", "partial"]
    assert any("leaderboard" in s.value.lower() for s in at.subheader)
