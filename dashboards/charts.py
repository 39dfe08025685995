"""Altair charts for the leaderboard pages (no Streamlit: they render in notebooks too)."""
from __future__ import annotations

from typing import Optional

import altair as alt
import pandas as pd


def ci_dots(frame: pd.DataFrame, label: str = "model", value: str = "value", lo: str = "ci_low",
            hi: str = "ci_high", title: str = "", higher_is_better: bool = True,
            color: Optional[str] = None) -> alt.Chart:
    """A dot per row with its 95% CI as an error bar, best first (top)."""
    data = frame[[c for c in dict.fromkeys([label, value, lo, hi, "n", color]) if c and c in frame]].copy()
    data = data.dropna(subset=[value])
    order = list(data.sort_values(value, ascending=not higher_is_better, kind="stable")[label])
    y = alt.Y(f"{label}:N", sort=order, title=None)
    tooltip = [alt.Tooltip(f"{c}:Q" if c != label else f"{c}:N", format=".4g" if c != label else "")
               for c in (label, value, lo, hi) if c in data] + ([alt.Tooltip("n:Q")] if "n" in data else [])
    base = alt.Chart(data, title=title)
    bars = base.mark_rule(strokeWidth=2).encode(y=y, x=alt.X(f"{lo}:Q", title=value, scale=alt.Scale(zero=False)),
                                                x2=f"{hi}:Q", tooltip=tooltip)
    dots = base.mark_point(filled=True, size=70).encode(y=y, x=f"{value}:Q", tooltip=tooltip,
                                                        **({"color": f"{color}:N"} if color else {}))
    return (bars + dots).properties(height=max(60, 26 * max(1, len(order))))


def breakdown_dots(frame: pd.DataFrame, title: str = "") -> alt.Chart:
    """Groups down, one colored dot (+ CI) per model: MMLU subjects, MATH levels, MT-Bench categories."""
    data = frame.dropna(subset=["value"]).copy()
    data["ci_low"] = data["ci_low"].fillna(data["value"])
    data["ci_high"] = data["ci_high"].fillna(data["value"])
    y = alt.Y("group:N", title=None, sort=sorted(data["group"].unique(), key=_natural))
    tooltip = ["model:N", "group:N", alt.Tooltip("value:Q", format=".4g"), alt.Tooltip("ci_low:Q", format=".4g"),
               alt.Tooltip("ci_high:Q", format=".4g"), "n:Q"]
    base = alt.Chart(data, title=title)
    off = alt.YOffset("model:N")
    bars = base.mark_rule().encode(y=y, yOffset=off, x=alt.X("ci_low:Q", title="value", scale=alt.Scale(zero=False)),
                                   x2="ci_high:Q", color="model:N", tooltip=tooltip)
    dots = base.mark_point(filled=True).encode(y=y, yOffset=off, x="value:Q", color="model:N", tooltip=tooltip)
    return (bars + dots).properties(height=max(80, 22 * data["group"].nunique() * max(1, data["model"].nunique())
                                               ** 0.5))


def heatmap(matrix: pd.DataFrame, title: str, value_format: str = ".2f", scheme: str = "redblue") -> alt.Chart:
    """Row model vs column model (e.g. win rate of the row over the column, or battle counts)."""
    order = list(matrix.index)
    long = matrix.reset_index(names="model").melt(id_vars="model", var_name="opponent", value_name="value")
    long = long.dropna(subset=["value"])
    x = alt.X("opponent:N", sort=order, title="opponent (column)")
    y = alt.Y("model:N", sort=order, title="model (row)")
    base = alt.Chart(long, title=title)
    rect = base.mark_rect().encode(x=x, y=y, color=alt.Color("value:Q", scale=alt.Scale(scheme=scheme)),
                                   tooltip=["model:N", "opponent:N", alt.Tooltip("value:Q", format=value_format)])
    text = base.mark_text(fontSize=11).encode(x=x, y=y, text=alt.Text("value:Q", format=value_format))
    return (rect + text).properties(height=max(120, 36 * len(order)))


def _natural(s: str):
    return [int(p) if p.isdigit() else p for p in str(s).replace("Level ", "").split()]
