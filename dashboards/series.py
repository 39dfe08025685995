"""Checkpoint series (no Streamlit): the runs of one training run (``--series NAME --step N``) as a
metric-against-step frame, and the first step that is significantly worse than the best step before it."""
from __future__ import annotations

from typing import Optional

import pandas as pd

SERIES_COLUMNS = ["series", "step", "col", "task", "metric", "value", "ci_low", "ci_high", "n", "higher_is_better",
                  "run_id", "created_at"]


def series_frame(cells: pd.DataFrame, series: Optional[str] = None) -> pd.DataFrame:
    """One row per (series, step, task column, metric): the newest run's value and 95% CI at that step."""
    if not len(cells) or "series" not in cells:
        return pd.DataFrame(columns=SERIES_COLUMNS)
    sel = cells[cells["series"].notna() & cells["step"].notna()]
    if series is not None:
        sel = sel[sel["series"] == series]
    if not len(sel):
        return pd.DataFrame(columns=SERIES_COLUMNS)
    sel = sel.sort_values("created_at").drop_duplicates(["series", "step", "col", "metric"], keep="last")
    out = sel[SERIES_COLUMNS].copy()
    out["step"] = out["step"].astype(int)
    return out.sort_values(["series", "col", "metric", "step"]).reset_index(drop=True)


def first_drop(points: pd.DataFrame) -> Optional[dict]:
    """The first step whose 95% CI lies wholly below (worse than) the CI of the best step before it, for one
    series, task and metric: {"step", "best_step", "ci", "best_ci"}; None when no step is. Steps without
    an interval are skipped."""
    best = None
    for row in points.sort_values("step").itertuples():
        if pd.isna(row.ci_low) or pd.isna(row.ci_high) or pd.isna(row.value):
            continue
        higher = bool(row.higher_is_better) if not pd.isna(row.higher_is_better) else True
        if best is not None:
            worse = row.ci_high < best.ci_low if higher else row.ci_low > best.ci_high
            if worse:
                return {"step": int(row.step), "best_step": int(best.step), "ci": (row.ci_low, row.ci_high),
                        "best_ci": (best.ci_low, best.ci_high)}
        if best is None or (row.value > best.value if higher else row.value < best.value):
            best = row
    return None
