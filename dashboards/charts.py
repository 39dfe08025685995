"""Altair charts for the leaderboard pages (no Streamlit: they render in notebooks too).

Every chart is sized to its content: the plot height is ``ROW`` pixels per row (model, subject, …)
and labels are never cut (``labelLimit=0, labelOverlap=False``), so 3 models and 57 subjects both stay readable.
"""
from __future__ import annotations

from typing import Optional, Sequence

import altair as alt
import pandas as pd

ROW = 28              # pixels per row of a dot, bar or heatmap chart
DENSE_ROW = 22        # breakdowns (57 MMLU subjects)
MIN_PLOT = 90         # the smallest plot area (pixels), whatever the number of rows
BAR, PINNED = "#4c78a8", "#f58518"      # a bar's colour; a pinned model's bar


def svg(chart):
    """Render as SVG (crisp text, labels in the page's DOM for tests and screen readers); the width fits the
    container and the height is the plot's own (``fit-x``): with Streamlit's default ``fit`` the plot shrinks
    inside the total height and rows collapse onto one line."""
    return chart.properties(usermeta={"embedOptions": {"renderer": "svg"}},
                            autosize=alt.AutoSizeParams(type="fit-x", contains="padding"))


def plot_height(rows: int, row: int = ROW) -> int:
    return max(MIN_PLOT, row * max(1, rows))


def _y(field: str, order: list, title=None) -> alt.Y:
    return alt.Y(f"{field}:N", sort=order, title=title,
                 axis=alt.Axis(labelLimit=0, labelOverlap=False, labelFontSize=12))


def ci_dots(frame: pd.DataFrame, label: str = "model", value: str = "value", lo: str = "ci_low",
            hi: str = "ci_high", title: str = "", higher_is_better: bool = True,
            color: Optional[str] = None) -> alt.LayerChart:
    """A dot per row with its 95% CI as an error bar, best first (top)."""
    data = frame[[c for c in dict.fromkeys([label, value, lo, hi, "n", color]) if c and c in frame]].copy()
    data = data.dropna(subset=[value])
    order = list(dict.fromkeys(data.sort_values(value, ascending=not higher_is_better, kind="stable")[label]))
    y = _y(label, order)
    tooltip = [alt.Tooltip(f"{c}:Q" if c != label else f"{c}:N", format=".4g" if c != label else "")
               for c in (label, value, lo, hi) if c in data] + ([alt.Tooltip("n:Q")] if "n" in data else [])
    base = alt.Chart(data, title=title)
    bars = base.mark_rule(strokeWidth=2).encode(y=y, x=alt.X(f"{lo}:Q", title=value, scale=alt.Scale(zero=False)),
                                                x2=f"{hi}:Q", tooltip=tooltip)
    dots = base.mark_point(filled=True, size=70).encode(y=y, x=f"{value}:Q", tooltip=tooltip,
                                                        **({"color": f"{color}:N"} if color else {}))
    return svg((bars + dots).properties(height=plot_height(len(order))))


def ci_bars(frame: pd.DataFrame, label: str = "model", title: str = "", higher_is_better: bool = True,
            value_title: str = "value", pinned: Sequence[str] = ()) -> alt.LayerChart:
    """Horizontal bars (value) with 95% CI whiskers, best first; the value printed at the bar's end; the
    bars of ``pinned`` rows in another colour."""
    data = frame.dropna(subset=["value"]).copy()
    data["ci_low"] = data["ci_low"].fillna(data["value"])
    data["ci_high"] = data["ci_high"].fillna(data["value"])
    order = list(dict.fromkeys(data.sort_values("value", ascending=not higher_is_better, kind="stable")[label]))
    y = _y(label, order)
    tooltip = [f"{label}:N", alt.Tooltip("value:Q", format=".4g"), alt.Tooltip("ci_low:Q", format=".4g"),
               alt.Tooltip("ci_high:Q", format=".4g")] + (["n:Q"] if "n" in data else [])
    base = alt.Chart(data, title=title)
    x = alt.X("value:Q", title=value_title)
    colour = {"color": alt.condition(alt.FieldOneOfPredicate(field=label, oneOf=list(pinned)), alt.value(PINNED),
                                     alt.value(BAR))} if len(pinned) else {}
    bars = base.mark_bar(opacity=0.75, height=alt.RelativeBandSize(0.7)).encode(y=y, x=x, tooltip=tooltip, **colour)
    whisk = base.mark_rule(strokeWidth=2, color="black").encode(y=y, x="ci_low:Q", x2="ci_high:Q", tooltip=tooltip)
    text = base.mark_text(align="left", dx=4, fontSize=11).encode(y=y, x="ci_high:Q",
                                                                   text=alt.Text("value:Q", format=".4g"))
    return svg((bars + whisk + text).properties(height=plot_height(len(order))))


def score_heatmap(long: pd.DataFrame, models: list, columns: list, title: str = "") -> alt.LayerChart:
    """Models x columns: colour = place within the column (1 = best, direction-aware), text = value."""
    sel = alt.selection_point(name="cell", fields=["entry", "col"], on="click")
    x = alt.X("column:N", sort=columns, title=None,
              axis=alt.Axis(orient="top", labelAngle=-30, labelLimit=0, labelOverlap=False, labelFontSize=12,
                            labelAlign="left"))
    y = _y("model", models)
    tooltip = ["model:N", "column:N", alt.Tooltip("value:Q", format=".4g"), alt.Tooltip("ci_low:Q", format=".4g"),
               alt.Tooltip("ci_high:Q", format=".4g"), "rank:Q"]
    base = alt.Chart(long, title=title)
    rect = base.mark_rect(stroke="white").encode(
        x=x, y=y, tooltip=tooltip,
        color=alt.Color("goodness:Q", scale=alt.Scale(scheme="blues", domain=[0, 1]),
                        legend=alt.Legend(title="within column", values=[0, 1],
                                          labelExpr="datum.value ? 'best' : 'worst'"))).add_params(sel)
    text = base.mark_text(fontSize=11).encode(
        x=x, y=y, text="text:N",
        color=alt.condition("datum.goodness > 0.6", alt.value("white"), alt.value("black")))
    return svg((rect + text).properties(height=plot_height(len(models))))


def breakdown_heatmap(frame: pd.DataFrame, title: str = "") -> alt.LayerChart:
    """Groups (MMLU subjects, MATH levels, MT-Bench categories) x models: colour and text = value."""
    data = frame.dropna(subset=["value"]).copy()
    groups = sorted(data["group"].unique(), key=_natural)
    models = list(dict.fromkeys(data["model"]))
    y = alt.Y("group:N", sort=groups, title=None, axis=alt.Axis(labelLimit=0, labelOverlap=False, labelFontSize=11))
    x = alt.X("model:N", sort=models, title=None,
              axis=alt.Axis(orient="top", labelAngle=-30, labelLimit=0, labelOverlap=False, labelAlign="left"))
    tooltip = ["group:N", "model:N", alt.Tooltip("value:Q", format=".4g"), alt.Tooltip("ci_low:Q", format=".4g"),
               alt.Tooltip("ci_high:Q", format=".4g"), "n:Q"]
    base = alt.Chart(data, title=title)
    rect = base.mark_rect(stroke="white").encode(x=x, y=y, tooltip=tooltip,
                                                 color=alt.Color("value:Q", scale=alt.Scale(scheme="viridis")))
    mid = (data["value"].min() + data["value"].max()) / 2 if len(data) else 0.0
    text = base.mark_text(fontSize=10).encode(x=x, y=y, text=alt.Text("value:Q", format=".3~g"),
                                              color=alt.condition(f"datum.value > {mid}", alt.value("black"),
                                                                  alt.value("white")))
    return svg((rect + text).properties(height=plot_height(len(groups), DENSE_ROW)))


def breakdown_dots(frame: pd.DataFrame, title: str = "") -> alt.LayerChart:
    """Groups down, one coloured dot (+ CI) per model (kept for notebooks; the page shows the heatmap)."""
    data = frame.dropna(subset=["value"]).copy()
    data["ci_low"] = data["ci_low"].fillna(data["value"])
    data["ci_high"] = data["ci_high"].fillna(data["value"])
    groups = sorted(data["group"].unique(), key=_natural)
    y = alt.Y("group:N", title=None, sort=groups, axis=alt.Axis(labelLimit=0, labelOverlap=False))
    tooltip = ["model:N", "group:N", alt.Tooltip("value:Q", format=".4g"), alt.Tooltip("ci_low:Q", format=".4g"),
               alt.Tooltip("ci_high:Q", format=".4g"), "n:Q"]
    base = alt.Chart(data, title=title)
    off = alt.YOffset("model:N")
    bars = base.mark_rule().encode(y=y, yOffset=off, x=alt.X("ci_low:Q", title="value", scale=alt.Scale(zero=False)),
                                   x2="ci_high:Q", color="model:N", tooltip=tooltip)
    dots = base.mark_point(filled=True).encode(y=y, yOffset=off, x="value:Q", color="model:N", tooltip=tooltip)
    return svg((bars + dots).properties(height=plot_height(len(groups) * max(1, data["model"].nunique()))))


def passk_curves(frame: pd.DataFrame, title: str = "", series: str = "model", y_title: str = "pass@k",
                 x_title: str = "k (samples per item)") -> alt.LayerChart:
    """pass@k against k, one line per ``series`` value (a model; for best-of-N a method) with its
    95% CI band (GRPO groups, best-of-N)."""
    data = frame.dropna(subset=["value", "k"]).copy()
    data["ci_low"] = data["ci_low"].fillna(data["value"])
    data["ci_high"] = data["ci_high"].fillna(data["value"])
    ks = sorted(int(k) for k in data["k"].unique())
    x = alt.X("k:Q", title=x_title, scale=alt.Scale(type="log", base=2, domain=[ks[0], ks[-1]] if ks else None),
              axis=alt.Axis(values=ks, format="d"))
    tooltip = [f"{series}:N", *(["model:N"] if series != "model" and "model" in data else []), "k:Q",
               alt.Tooltip("value:Q", format=".4g"), alt.Tooltip("ci_low:Q", format=".4g"),
               alt.Tooltip("ci_high:Q", format=".4g"), "n:Q"]
    base = alt.Chart(data, title=title)
    colors = alt.Scale(scheme="category10")          # distinct hues: the theme's blues look alike
    band = base.mark_area(opacity=0.15).encode(x=x, y=alt.Y("ci_low:Q", title=y_title), y2="ci_high:Q",
                                               color=alt.Color(f"{series}:N", scale=colors, legend=None))
    line = base.mark_line(point=True).encode(x=x, y="value:Q", color=alt.Color(
        f"{series}:N", scale=colors, legend=alt.Legend(orient="bottom", columns=1, labelLimit=0)), tooltip=tooltip)
    return svg((band + line).properties(height=260))


def heatmap(matrix: pd.DataFrame, title: str, value_format: str = ".2f", scheme: str = "redblue") -> alt.LayerChart:
    """Row model vs column model (e.g. win rate of the row over the column, or battle counts)."""
    order = list(matrix.index)
    long = matrix.reset_index(names="model").melt(id_vars="model", var_name="opponent", value_name="value")
    long = long.dropna(subset=["value"])
    x = alt.X("opponent:N", sort=order, title="opponent (column)",
              axis=alt.Axis(orient="top", labelAngle=-35, labelLimit=0, labelOverlap=False))
    y = _y("model", order, "model (row)")
    base = alt.Chart(long, title=title)
    rect = base.mark_rect(stroke="white").encode(x=x, y=y, color=alt.Color("value:Q", scale=alt.Scale(scheme=scheme)),
                                                 tooltip=["model:N", "opponent:N",
                                                          alt.Tooltip("value:Q", format=value_format)])
    lo, hi = (long["value"].min(), long["value"].max()) if len(long) else (0.0, 0.0)
    dark = f"datum.value > {lo + 0.8 * (hi - lo)}"                # dark cells get white text
    if scheme == "redblue":
        dark += f" || datum.value < {lo + 0.2 * (hi - lo)}"
    text = base.mark_text(fontSize=11).encode(x=x, y=y, text=alt.Text("value:Q", format=value_format),
                                              color=alt.condition(dark, alt.value("white"), alt.value("black")))
    return svg((rect + text).properties(height=plot_height(len(order), 34)))


def _natural(s: str):
    return [int(p) if p.isdigit() else p for p in str(s).replace("Level ", "").split()]
