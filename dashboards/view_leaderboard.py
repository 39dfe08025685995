"""Leaderboard page: models x columns (value [95% CI] n=…, tie-aware rank), the overall column,
sorting, a column chooser, per-column metric choice, provenance of every cell, judge figures."""
from __future__ import annotations

import streamlit as st

from evalkit.dashboards import tables


def metric_key(col: str) -> str:
    return f"metric::{col}"


def chosen_metric(cells, col: str) -> str:
    """The metric shown for a column (chosen on the leaderboard page, shared with the task page)."""
    metrics = tables.columns(cells[cells["col"] == col])["metrics"]
    options = metrics.iloc[0] if len(metrics) else []
    picked = st.session_state.get(metric_key(col))
    return picked if picked in options else tables.default_metric(cells, col)


def render(store, filters: tables.Filters) -> None:
    st.title("Leaderboard")
    cells = tables.filter_cells(store.cells(), filters)
    if not len(cells):
        st.info("No results match the filters.")
        return
    meta = tables.columns(cells)
    label = dict(zip(meta["col"], meta["col_label"]))
    picked = st.multiselect("Columns", list(meta["col"]), format_func=label.get, key="lb_columns",
                            placeholder="all columns",
                            help="column = task x task version x prompt hash; empty = all columns")
    shown = picked or list(meta["col"])
    with st.expander("Metric per column"):
        for _, c in meta[meta["col"].isin(shown)].iterrows():
            current = chosen_metric(cells, c["col"])
            st.selectbox(c["col_label"], c["metrics"], index=c["metrics"].index(current), key=metric_key(c["col"]))
    left, right = st.columns([3, 1])
    sort_by = left.selectbox("Sort by", [tables.OVERALL] + shown, key="lb_sort",
                             format_func=lambda c: "overall (mean win rate)" if c == tables.OVERALL else label[c])
    best_first = right.toggle("Best first", value=True, key="lb_best_first")
    metric_for = {c: chosen_metric(cells, c) for c in shown}
    lb = tables.build_leaderboard(cells, metric_for, shown, sort_by, best_first)
    n_models, n_runs = len(lb.display), cells["run_id"].nunique()
    st.caption(f"{n_models} models · {len(shown)} columns · {n_runs} runs · cells: value [95% CI] n=items #rank "
               f"(metric per column: " + ", ".join(f"{label[c]}: {m}" for c, m in metric_for.items()) + ")")
    st.dataframe(lb.display, hide_index=True, key="leaderboard", width="stretch",
                 height=min(36 * (len(lb.display) + 1) + 24, 900))
    st.caption(tables.TIE_RULE)
    st.caption(tables.OVERALL_RULE)
    for note in lb.notes:
        st.info(note)
    render_provenance(store, lb)
    render_judges(store)


def render_provenance(store, lb: tables.Leaderboard) -> None:
    st.subheader("Provenance")
    prov = tables.provenance(store, lb.cells)
    if not len(prov):
        return
    left, right = st.columns(2)
    model = left.selectbox("Model", list(dict.fromkeys(prov["model"])), key="prov_model")
    mine = prov[prov["model"] == model]
    column = right.selectbox("Column", list(mine["column"]), key="prov_column")
    row = mine[mine["column"] == column].iloc[0]
    st.table(row.astype(str).rename("value").to_frame())
    if row["runs_in_cell"] > 1:
        st.caption(f"{row['runs_in_cell']} runs fill this cell; the newest is shown (turn off "
                   f"'Newest run per cell only' to see them in the task view).")
    with st.expander("Every shown cell"):
        st.dataframe(prov, hide_index=True, key="provenance_all")


def render_judges(store) -> None:
    figs = tables.judge_reliability(store)
    if not len(figs):
        return
    st.subheader("Judge reliability")
    st.caption("parse failures: judgments whose verdict could not be read (after retries); swap disagreement: "
               "share of pairs judged in both orders whose verdicts disagree (counted as a tie)")
    st.dataframe(figs, hide_index=True, key="judges")
