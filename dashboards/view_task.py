"""Task page: one column's models with 95% CI error bars, its breakdowns (MMLU subjects and
categories, MATH levels, MT-Bench categories and turns) and the sample browser (prompt, response,
extracted answer, target, per-sample metrics; failures only; long outputs in full)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from evalkit.dashboards import charts, data, tables
from evalkit.dashboards.view_leaderboard import chosen_metric, metric_key

PAGE_SIZE = 50
CLIP = 160


def render(store, filters: tables.Filters) -> None:
    st.title("Task")
    cells = tables.filter_cells(store.cells(), filters)
    meta = tables.columns(cells)
    if not len(meta):
        st.info("No results match the filters.")
        return
    label = dict(zip(meta["col"], meta["col_label"]))
    col = st.selectbox("Column", list(meta["col"]), format_func=label.get, key="task_col")
    metrics = meta.set_index("col").loc[col, "metrics"]
    current = chosen_metric(cells, col)
    metric = st.selectbox("Metric", metrics, index=metrics.index(current), key=f"task_{metric_key(col)}")
    sel = cells[(cells["col"] == col) & (cells["metric"] == metric)].copy()
    note = meta.set_index("col").loc[col, "col_note"]
    if isinstance(note, str):
        st.info(note)
    hib = bool(sel["higher_is_better"].iloc[0])
    sel["rank"] = tables.tied_ranks(sel["value"].to_numpy(), sel["ci_low"].to_numpy(), sel["ci_high"].to_numpy(),
                                    hib).to_numpy()
    sel["model"] = sel["label"] + ("" if filters.latest_only else " · " + sel["run_id"].str[-6:])
    st.altair_chart(charts.ci_dots(sel, "model", title=f"{label[col]}: {metric} (95% CI)", higher_is_better=hib),
                    key="task_chart")
    st.caption(("higher is better" if hib else "lower is better") + " · " + tables.TIE_RULE)
    table = sel.sort_values("rank")[["rank", "model", "value", "ci_low", "ci_high", "n", "run_id"]]
    st.dataframe(table, hide_index=True, key="task_table")
    render_breakdowns(store, cells, col, metric)
    render_samples(store, sel, metric, hib)


def render_breakdowns(store, cells, col: str, metric: str) -> None:
    bd = tables.breakdowns(store, cells, col)
    if not len(bd):
        return
    st.subheader("Breakdowns")
    dims = list(dict.fromkeys(bd["dimension"]))
    dim = st.selectbox("Breakdown", dims, key="bd_dim")
    part = bd[bd["dimension"] == dim]
    names = list(dict.fromkeys(part["metric"]))
    base = metric if metric in names else metric.rsplit("_turn", 1)[0]
    bmetric = st.selectbox("Breakdown metric", names, index=names.index(base) if base in names else 0, key="bd_metric")
    part = part[part["metric"] == bmetric]
    st.altair_chart(charts.breakdown_dots(part, f"{dim}: {bmetric}"), key="bd_chart")
    wide = part.assign(cell=[tables.cell_text(v, lo, hi, n) for v, lo, hi, n in
                             zip(part["value"], part["ci_low"], part["ci_high"], part["n"])])
    st.dataframe(wide.pivot_table(index="group", columns="model", values="cell", aggfunc="first"),
                 key="bd_table")


def render_samples(store, sel: pd.DataFrame, metric: str, hib: bool) -> None:
    st.subheader("Samples")
    runs = sel.drop_duplicates("run_id")
    choice = dict(zip(runs["run_id"], runs["model"]))
    run_id = st.selectbox("Run", list(choice), format_func=choice.get, key="sample_run")
    task = sel["task"].iloc[0]
    frame = store.samples(run_id, task)
    if not len(frame):
        st.info("This run has no samples file for the task.")
        return
    if frame.attrs.get("redacted"):
        st.warning("This task's questions and answers must not be shown; only ids and metrics are listed.")
    names = data.sample_metrics(frame)
    c1, c2, c3 = st.columns([2, 2, 3])
    fmetric = c1.selectbox("Failure metric", names or ["(none)"],
                           index=names.index(metric) if metric in names else 0,
                           key=f"sample_metric::{run_id}::{metric}")
    only_fail = c2.checkbox("Failures only", value=False, key="sample_failures", disabled=not names)
    query = c3.text_input("Search prompt / response / target", key="sample_query")
    shown = frame
    if only_fail and names:
        shown = shown[data.failures(shown, fmetric, hib)]
    if query:
        q = query.lower()
        hit = pd.Series(False, index=shown.index)
        for c in ("prompt", "response", "target", "extracted", "doc_id"):
            hit |= shown[c].astype(str).str.lower().str.contains(q, regex=False)
        shown = shown[hit]
    if not names:
        st.caption("No per-sample metrics in this task (corpus metrics only), so no failure filter.")
    pages = max(1, -(-len(shown) // PAGE_SIZE))
    page = st.number_input(f"Page (of {pages}, {len(shown)} samples)", 1, pages, 1, key="sample_page")
    view = shown.iloc[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]
    cols = ["doc_id", "target", "extracted", "response"] + [f"metric:{m}" for m in names] + ["finish_reason"]
    clipped = view[cols].copy()
    for c in ("target", "extracted", "response"):
        clipped[c] = clipped[c].map(lambda s: s if len(str(s)) <= CLIP else str(s)[:CLIP] + "…")
    st.dataframe(clipped, hide_index=True, key="samples_table")
    if not len(view):
        return
    doc = st.selectbox("Read sample", list(view["doc_id"]), key="sample_doc")
    row = view[view["doc_id"] == doc].iloc[0]
    metrics = {m: row[f"metric:{m}"] for m in names}
    st.markdown(f"**doc {doc}** · target: `{row['target'][:200]}` · extracted: `{row['extracted'][:200]}` · "
                f"metrics: {metrics}")
    st.code(row["prompt"] or "(no prompt)", language=None, wrap_lines=True, height=300)
    for i, text in enumerate(row["responses"] or [""]):
        st.markdown(f"response {i + 1} of {row['n_responses']}")
        st.code(text or "(empty)", language=None, wrap_lines=True)
