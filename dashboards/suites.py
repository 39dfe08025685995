"""Suite summaries from the records (``run.suite``): the Open LLM Leaderboard v2 normalised scores
and their average, one row per run, as text cells and as numbers for the chart. No Streamlit."""
from __future__ import annotations

import pandas as pd

from evalkit.dashboards.tables import as_metric_value, cell_text

BENCHMARKS = ("average", "ifeval", "bbh", "math_hard", "gpqa", "musr", "mmlu_pro")


def suite_rows(store) -> pd.DataFrame:
    """Per run with leaderboard-v2 figures: model, suite, run, each benchmark's figure (text), the
    average's value and CI (numbers), sorted by the average (runs without one last); made once per
    version of the data."""
    return store.derived("suite_rows", lambda: _suite_rows(store))


def _suite_rows(store) -> pd.DataFrame:
    rows = []
    for run_id, run in store.summaries().items():
        suite = run.get("suite") or {}
        figures = {k: as_metric_value(v) for k, v in (suite.get("leaderboard_v2") or {}).items()}
        if not figures:
            continue
        row = {"model": (run.get("model") or {}).get("name"), "suite": suite.get("name", ""), "run_id": run_id}
        for name in BENCHMARKS:
            mv = figures.get(name)
            row[name] = cell_text(mv.value, mv.ci_low, mv.ci_high, mv.n, digits=1) if mv else "–"
        avg = figures.get("average")
        row.update(avg_value=avg.value if avg else None, avg_low=avg.ci_low if avg else None,
                   avg_high=avg.ci_high if avg else None, missing=", ".join(suite.get("missing") or []))
        rows.append(row)
    frame = pd.DataFrame(rows, columns=["model", "suite", "run_id", *BENCHMARKS, "avg_value", "avg_low", "avg_high",
                                        "missing"])
    twice = frame["model"].duplicated(keep=False)
    frame["label"] = frame["model"].where(~twice, frame["model"] + " · " + frame["run_id"])
    return frame.sort_values("avg_value", ascending=False, na_position="last", kind="stable").reset_index(drop=True)
