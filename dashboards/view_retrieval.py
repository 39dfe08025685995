"""Retrieval page: metric@k curves with 95% CI bands, one line per retriever, for the retrieval tasks
(hit, MRR, NDCG, recall, P, MAP at each cutoff the runs recorded), and the figures as a table."""
from __future__ import annotations

import re

import altair as alt
import pandas as pd
import streamlit as st

from evalkit.dashboards import charts, tables
from evalkit.dashboards.urlstate import choose

FAMILIES = ("hit", "mrr", "ndcg", "recall", "P", "map")
_AT_K = re.compile(r"^(hit|mrr|ndcg|recall|P|map)@(\d+)$")


def curve_frame(cells: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``family@k`` metrics: label, col, family, k, value, ci_low, ci_high, n."""
    if not len(cells):
        return pd.DataFrame(columns=["label", "col", "family", "k", "value", "ci_low", "ci_high", "n"])
    m = cells["metric"].astype(str).str.extract(_AT_K)
    sel = cells[m[0].notna()].copy()
    sel["family"], sel["k"] = m.loc[sel.index, 0], m.loc[sel.index, 1].astype(int)
    keep = [c for c in ("label", "col", "family", "k", "value", "ci_low", "ci_high", "n", "run_id") if c in sel]
    return sel[keep].sort_values(["col", "label", "family", "k"]).reset_index(drop=True)


def curve_chart(frame: pd.DataFrame, title: str) -> alt.LayerChart:
    base = alt.Chart(frame, title=title).encode(
        x=alt.X("k:Q", scale=alt.Scale(type="log"), title="cutoff k"),
        color=alt.Color("label:N", title="retriever"))
    band = base.mark_area(opacity=0.15).encode(y=alt.Y("ci_low:Q", title="value", scale=alt.Scale(zero=False)),
                                               y2="ci_high:Q")
    line = base.mark_line(point=True).encode(y="value:Q", tooltip=["label:N", "k:Q", alt.Tooltip("value:Q", format=".4f"),
                                                                    alt.Tooltip("ci_low:Q", format=".4f"),
                                                                    alt.Tooltip("ci_high:Q", format=".4f")])
    return charts.svg((band + line).properties(height=320))


def render(store, filters: tables.Filters) -> None:
    st.title("Retrieval")
    frame = curve_frame(tables.filter_cells(store.cells(), filters))
    if not len(frame):
        st.info("No retrieval results: run `evalkit retrieve ...` or `evalkit score --task retrieval --run ... "
                "--qrels ...` and reload.")
        return
    label = tables.col_labels(store.cells())
    cols = list(dict.fromkeys(frame["col"]))
    col = choose(st, "selectbox", "Task", cols, "retrieval_col", format_func=lambda c: label.get(c, c))
    fams = [f for f in FAMILIES if f in set(frame[frame["col"] == col]["family"])]
    fam = choose(st, "radio", "Measure", fams, "retrieval_family", default=fams[0])
    sel = frame[(frame["col"] == col) & (frame["family"] == fam)]
    st.altair_chart(curve_chart(sel, f"{label.get(col, col)}: {fam}@k (95% CI)"), key="retrieval_chart",
                    width="stretch")
    table = sel.pivot_table(index="label", columns="k", values="value", aggfunc="first")
    table.columns = [f"{fam}@{k}" for k in table.columns]
    st.dataframe(table.reset_index(), hide_index=True)
