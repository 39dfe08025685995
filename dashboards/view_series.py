"""Series page: a training run's checkpoints (runs made with ``--series NAME --step N``, or
``evalkit.evaluate(..., series=, step=)``), each task's metric against the step with 95% CI bands, and
the first step whose interval lies wholly on the worse side of the best earlier step's, marked on the chart
and named."""
from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from evalkit.dashboards import charts, tables
from evalkit.dashboards.series import first_drop, series_frame
from evalkit.dashboards.urlstate import choose

MAX_CHARTS = 12  # task charts drawn at once (the page stays bounded; pick others in the selector)


def step_chart(points: pd.DataFrame, title: str, drop) -> alt.LayerChart:
    base = alt.Chart(points, title=title).encode(x=alt.X("step:Q", title="training step"))
    band = base.mark_area(opacity=0.2).encode(y=alt.Y("ci_low:Q", title="value", scale=alt.Scale(zero=False)),
                                              y2="ci_high:Q")
    line = base.mark_line(point=True).encode(
        y="value:Q", tooltip=["step:Q", alt.Tooltip("value:Q", format=".4f"), alt.Tooltip("ci_low:Q", format=".4f"),
                              alt.Tooltip("ci_high:Q", format=".4f"), "n:Q"])
    layers = band + line
    if drop is not None:
        marked = points[points["step"] == drop["step"]]
        layers += alt.Chart(marked).mark_point(shape="triangle-down", size=160, color="#d62728", filled=True).encode(
            x="step:Q", y="value:Q")
    return charts.svg(layers.properties(height=260))


def render(store, filters: tables.Filters) -> None:
    st.title("Series")
    frame = series_frame(tables.filter_cells(store.cells(), filters))
    if not len(frame):
        st.info("No checkpoint series: evaluate checkpoints with `evalkit run ... --series NAME --step N` (or "
                "`evalkit.evaluate(model, tasks, series=NAME, step=N)` inside a training loop) and reload.")
        return
    name = choose(st, "selectbox", "Training run", sorted(frame["series"].unique()), "series_name")
    sel = frame[frame["series"] == name]
    label = tables.col_labels(store.cells())
    cols = list(dict.fromkeys(sel["col"]))
    shown = choose(st, "multiselect", "Tasks", cols, "series_tasks", default=cols[:MAX_CHARTS],
                   format_func=lambda c: label.get(c, c)) or cols[:MAX_CHARTS]
    st.caption(f"{sel['step'].nunique()} checkpoint(s), steps {sel['step'].min()}–{sel['step'].max()}; a red "
               f"triangle marks the first step whose 95% CI lies wholly on the worse side of the best earlier step's "
               f"(lower, or higher where lower is better).")
    rows = []
    for col in shown[:MAX_CHARTS]:
        metrics = list(dict.fromkeys(sel[sel["col"] == col]["metric"]))
        metric = metrics[0]
        points = sel[(sel["col"] == col) & (sel["metric"] == metric)]
        drop = first_drop(points)
        st.altair_chart(step_chart(points, f"{label.get(col, col)}: {metric} (95% CI)", drop),
                        key=f"series_chart_{col}", width="stretch")
        rows.append({"task": label.get(col, col), "metric": metric,
                     "first drop": "-" if drop is None else
                     f"step {drop['step']}: [{drop['ci'][0]:.4f}, {drop['ci'][1]:.4f}] worse than step "
                     f"{drop['best_step']}'s [{drop['best_ci'][0]:.4f}, {drop['best_ci'][1]:.4f}]"})
    st.subheader("Significant drops")
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="series_drops")
    table = sel[sel["col"].isin(shown)].pivot_table(index="step", columns="col", values="value", aggfunc="first")
    table.columns = [label.get(c, c) for c in table.columns]
    st.subheader("Values by step")
    st.dataframe(table.reset_index(), hide_index=True, key="series_values")
