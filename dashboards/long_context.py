"""Long context on the task page: the depth x length heat map of ``niah_grid`` runs, one per model.

The task reports a ``cell:LENGTH@DEPTH`` breakdown (score, CI, n per cell of the grid;
``tasks/ruler/grid.py``); ``depth_length_grid`` reshapes those rows (``tables.breakdowns``) into
length, depth and score columns, ``depth_length_heatmap`` draws one model's grid (Kamradt's
needle-in-a-haystack picture: context length across, needle depth down, colour = score).
Reads breakdown rows only (no engine, no backend).
"""
from __future__ import annotations

import re

import altair as alt
import pandas as pd

CELL = re.compile(r"^(\d+)@(\d+(?:\.\d+)?)$")


def depth_length_grid(part: pd.DataFrame) -> pd.DataFrame:
    """Rows of a ``cell`` breakdown -> model, length, depth, value, ci_low, ci_high, n (empty if the
    groups are not LENGTH@DEPTH)."""
    cols = ["model", "length", "depth", "value", "ci_low", "ci_high", "n"]
    if not len(part):
        return pd.DataFrame(columns=cols)
    found = part["group"].astype(str).str.extract(CELL)
    if found.isna().any().any():
        return pd.DataFrame(columns=cols)
    out = part.assign(length=found[0].astype(int), depth=found[1].astype(float))
    return out[cols].sort_values(["model", "length", "depth"]).reset_index(drop=True)


def depth_length_heatmap(grid: pd.DataFrame, model: str, title: str = "") -> alt.LayerChart:
    from evalkit.dashboards.charts import plot_height, svg
    data = grid[grid["model"] == model].dropna(subset=["value"])
    lengths, depths = sorted(data["length"].unique()), sorted(data["depth"].unique())
    x = alt.X("length:O", sort=lengths, title="context length (tokens)", axis=alt.Axis(labelAngle=0))
    y = alt.Y("depth:O", sort=depths, title="needle depth (%)")
    tooltip = ["length:O", "depth:O", alt.Tooltip("value:Q", format=".3g"), alt.Tooltip("ci_low:Q", format=".3g"),
               alt.Tooltip("ci_high:Q", format=".3g"), "n:Q"]
    base = alt.Chart(data, title=title or model)
    rect = base.mark_rect(stroke="white").encode(
        x=x, y=y, tooltip=tooltip, color=alt.Color("value:Q", scale=alt.Scale(scheme="redyellowgreen", domain=[0, 1])))
    text = base.mark_text(fontSize=10).encode(x=x, y=y, text=alt.Text("value:Q", format=".2~f"))
    return svg((rect + text).properties(height=plot_height(len(depths), 22)))


def render_grids(part: pd.DataFrame, metric: str) -> None:
    """One heat map per model on the task page (nothing if the breakdown is not a depth x length grid)."""
    import streamlit as st
    grid = depth_length_grid(part)
    for i, model in enumerate(dict.fromkeys(grid["model"])):
        st.altair_chart(depth_length_heatmap(grid, model, f"{model}: {metric} by needle depth and context length"),
                        key=f"bd_grid_{i}", width="stretch")
