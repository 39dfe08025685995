"""Task page: one column's models as bars with 95% CI whiskers, its breakdowns as heatmaps (MMLU
subjects, MATH levels, MT-Bench categories and turns) and the sample browser: the question (few-shot
examples folded), the answer, the extracted answer, the target and the metrics, and for one item every
model's answer side by side. Bad sample lines are skipped with a warning naming file and line."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from evalkit.dashboards import (charts, judged_views, judging, long_context, rowcontrols, rowpages,
                                samples as dsamples, tables, view_best_of_n)
from evalkit.dashboards.urlstate import choose, metric_key as task_metric_key
from evalkit.dashboards.view_leaderboard import chosen_metric

PAGE_SIZE = 50
PAGE_KEY = "task_page"    # the models' page (the samples have their own, sample_page)
CLIP = 160
SIDE_BY_SIDE = 4          # answers per row in "the page's models on this item"
SIDE_BY_SIDE_HEIGHT = 760  # pixels; beyond two rows of answers they scroll inside this box


def render(store, filters: tables.Filters) -> None:
    st.title("Task")
    cells = tables.filter_cells(store.cells(), filters)
    meta = tables.columns(cells)
    if not len(meta):
        st.info("No results match the filters.")
        return
    label = dict(zip(meta["col"], meta["col_label"]))
    col = choose(st, "selectbox", "Column", list(meta["col"]), "task_col", format_func=label.get)
    metrics = meta.set_index("col").loc[col, "metrics"]
    metric = choose(st, "selectbox", "Metric", metrics, task_metric_key(col), default=chosen_metric(meta, col))
    sel = cells[(cells["col"] == col) & (cells["metric"] == metric)].copy()
    note = meta.set_index("col").loc[col, "col_note"]
    if isinstance(note, str):
        st.info(note)
    hib = bool(sel["higher_is_better"].iloc[0])
    sel["rank"] = tables.tied_ranks(sel["value"].to_numpy(), sel["ci_low"].to_numpy(), sel["ci_high"].to_numpy(),
                                    hib).to_numpy()
    sel["model"] = sel["label"] + ("" if filters.latest_only else " · " + sel["run_id"].str[-6:])
    arrow = "↑" if hib else "↓"
    ranked = sel.sort_values(["rank", "value"], ascending=[True, not hib], kind="stable")
    win = rowcontrols.rows(list(ranked["model"]), PAGE_KEY, cells["label"].dropna(), list(ranked["label"]))
    shown = ranked.iloc[win.rows]
    pinned = list(ranked["model"].iloc[win.pinned])
    st.altair_chart(charts.ci_bars(shown, "model", f"{label[col]}: {metric} {arrow} (95% CI)", hib, metric,
                                   pinned=pinned), key="task_chart", width="stretch")
    st.caption(("higher is better" if hib else "lower is better") + " · " + tables.TIE_RULE)
    table = shown[["rank", "model", "value", "ci_low", "ci_high", "n", "run_id", "task"]].copy()
    if pinned:
        table.insert(0, rowpages.PIN, [rowpages.PIN if m in pinned else "" for m in table["model"]])
    budget = tables.budget_columns(store, table, metric)  # shares that hit max_tokens, ...; finished/truncated
    judge = judging.judge_columns(store, table, metric)  # judged scores: the judge and its reliability
    table = pd.concat([table.drop(columns="task"), budget, judge], axis=1)
    shares = [c for c in budget.columns if c in tables.BUDGET_COLUMNS.values()]
    st.dataframe(table, hide_index=True, key="task_table", column_config={
        "rank": st.column_config.NumberColumn("rank", format="%d"),
        "model": st.column_config.TextColumn("model", pinned=True),
        "value": st.column_config.NumberColumn(f"{metric} {arrow}", format="%.4g"),
        **{c: st.column_config.NumberColumn(c, format="percent") for c in shares},
        **{c: st.column_config.NumberColumn(c, format="percent") for c in judge.columns
           if c in ("judge parse failures", "swap consistency", "judges agree")}})
    if len(judge.columns):
        st.caption("Judged score: the judge model that gave it, its replies with no verdict (parse failures) and, "
                   "pairwise, the share of games whose two orders agreed (position-swap consistency)")
    if len(budget.columns):
        st.caption("Budget columns: share of responses that stopped at max_tokens, never closed their reasoning "
                   "trace, or had no parseable answer (from the samples)"
                   + ("; where over 5% stopped at max_tokens, the score on finished and on truncated responses"
                      if len(shares) < len(budget.columns) else ""))
    judged_views.render(store, shown, sel["task"].iloc[0])  # Arena-Hard's categories, HealthBench's themes, axes
    on_page = cells[cells["entry"].isin(shown["entry"])]
    render_breakdowns(store, on_page, col, metric)
    render_grpo(store, on_page, col)
    view_best_of_n.render(store, filters, col)
    render_samples(store, sel, shown, metric, hib, meta.set_index("col").loc[col, "family"])


#: breakdowns over token counts drawn as curves: RULER's context lengths, --thinking-budgets
CURVES = {"length": "context length", "thinking_budget": "thinking budget"}


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
    if dim in CURVES and part["group"].str.isdigit().all():  # a score against tokens: one line per model
        curve = part.assign(k=part["group"].astype(int))
        what = CURVES[dim]
        st.altair_chart(charts.passk_curves(curve, f"{bmetric} against {what}", y_title=bmetric,
                                            x_title=f"{what} (tokens)"), key=f"bd_{dim}_curve", width="stretch")
    if dim == "cell":  # needle-in-a-haystack grid (niah_grid): depth x length heat map per model
        long_context.render_grids(part, bmetric)
    st.altair_chart(charts.breakdown_heatmap(part, f"{dim}: {bmetric} ({part['group'].nunique()} groups)"),
                    key="bd_chart", width="stretch")
    wide = part.assign(cell=[tables.cell_text(v, lo, hi, n) for v, lo, hi, n in
                             zip(part["value"], part["ci_low"], part["ci_high"], part["n"])])
    st.dataframe(wide.pivot_table(index="group", columns="model", values="cell", aggfunc="first"),
                 key="bd_table")


def render_grpo(store, cells, col: str) -> None:
    """GRPO group figures of runs with G > 1 samples per item: pass@k curves and the group shares."""
    g = tables.grpo_figures(store, cells, col)
    if not len(g):
        return
    with st.container(key="grpo_section"):
        _grpo_section(g)


def _grpo_section(g: pd.DataFrame) -> None:
    st.subheader("GRPO groups")
    st.caption("Runs with G samples per item (--gen-kwargs n=G). A group whose G rewards are all equal has "
               "zero advantage and teaches GRPO nothing; learnable = 0 < pass rate < 1. 95% CIs over items.")
    curves = g[g["k"].notna()]
    if curves["k"].nunique() > 1:
        st.altair_chart(charts.passk_curves(curves, "pass@k (95% CI)"), key="grpo_chart", width="stretch")
    g = g.assign(cell=[tables.cell_text(v, lo, hi, n) + ("" if hib else " ↓") for v, lo, hi, n, hib in
                       zip(g["value"], g["ci_low"], g["ci_high"], g["n"], g["higher_is_better"])])
    wide = g.pivot_table(index=["model", "G"], columns="figure", values="cell", aggfunc="first").reset_index()
    order = ["model", "G"] + sorted((c for c in wide.columns if str(c).startswith("pass@")), key=lambda c: int(c[5:])) + \
        [c for c in ("share_all_equal", "share_learnable", "mean_group_std", "share_all_correct", "share_all_wrong")
         if c in wide.columns]
    st.dataframe(wide[order], hide_index=True, key="grpo_table",
                 column_config={"model": st.column_config.TextColumn("model", pinned=True)})


def _warn(frame: pd.DataFrame) -> None:
    for w in frame.attrs.get("warnings", []):
        st.warning(w)


def render_samples(store, sel: pd.DataFrame, beside: pd.DataFrame, metric: str, hib: bool, family: str) -> None:
    """The samples of any run of ``sel``; on one item, the answers of the runs on the models' page
    (``beside``) side by side."""
    st.subheader("Samples")
    runs = sel.drop_duplicates("run_id")
    choice = dict(zip(runs["run_id"], runs["model"]))
    run_id = choose(st, "selectbox", "Run", list(choice), "sample_run", format_func=choice.get)
    task = sel["task"].iloc[0]
    frame = store.samples(run_id, task)
    _warn(frame)
    if not len(frame):
        st.info("This run has no samples file for the task.")
        return
    if frame.attrs.get("redacted"):
        st.warning("This task's questions and answers must not be shown; only ids and metrics are listed.")
    names = dsamples.sample_metrics(frame)
    c1, c2, c3 = st.columns([2, 2, 3])
    fmetric = c1.selectbox("Failure metric", names or ["(none)"],
                           index=names.index(metric) if metric in names else 0,
                           key=f"sample_metric::{run_id}::{metric}")
    only_fail = c2.checkbox("Failures only", value=False, key="sample_failures", disabled=not names)
    query = c3.text_input("Search prompt / response / target", key="sample_query")
    shown = frame
    if only_fail and names:
        shown = shown[dsamples.failures(shown, fmetric, hib)]
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
    st.dataframe(clipped, hide_index=True, key="samples_table", column_config={
        f"metric:{m}": st.column_config.NumberColumn(m, format="%.4g") for m in names})
    if not len(view):
        return
    docs = list(view["doc_id"])
    wanted = st.session_state.get("sample_doc")
    if wanted in set(frame["doc_id"]) and wanted not in docs:
        docs = [wanted] + docs                       # a deep link to a doc on another page
    doc = choose(st, "selectbox", "Read sample", docs, "sample_doc")
    row = frame[frame["doc_id"] == doc].iloc[0]
    render_sample(row, names, family)
    render_side_by_side(store, beside.drop_duplicates("run_id"), task, doc, choice)


def metrics_line(row, names) -> str:
    return " · ".join(f"{m}: **{dsamples.format_metric(row.get(f'metric:{m}'))}**" for m in names) or "no metrics"


def render_sample(row, names, family: str) -> None:
    st.markdown(f"#### doc `{row['doc_id']}`")
    st.markdown(metrics_line(row, names))
    what = "source" if family == "translation" else "question"
    st.markdown(f"**{what}**")
    if row["question"]:
        st.code(row["question"], language=None, wrap_lines=True)
    else:
        st.caption(f"(no prompt in this record: it was scored from a predictions file, so the {what} is not stored)")
    if row["fewshot"]:
        with st.expander(f"few-shot examples and instructions before the {what} "
                         f"({row['fewshot'].count(chr(10) + chr(10)) + 1} blocks)"):
            st.code(row["fewshot"], language=None, wrap_lines=True)
    if len(row.get("conversations") or []):
        render_conversations(row)
        return
    left, mid, right = st.columns([3, 1, 1])
    for i, text in enumerate(row["responses"] or [""]):
        left.markdown(f"**answer** {i + 1} of {row['n_responses']}" if row["n_responses"] > 1 else "**answer**")
        left.code(text or "(empty)", language=None, wrap_lines=True)
    mid.markdown("**extracted**")
    mid.code(row["extracted"] or "(nothing)", language=None, wrap_lines=True)
    right.markdown("**target**")
    right.code(row["target"] or "(none)", language=None, wrap_lines=True)


def render_conversations(row) -> None:
    """An agent sample: each trial's conversation as chat bubbles (user, agent, tool calls, results)."""
    convs = row["conversations"]
    for i, (conv, line) in enumerate(zip(convs, row["responses"])):
        with st.expander(f"conversation {i + 1} of {len(convs)}: {line}" if len(convs) > 1 else f"conversation: {line}",
                         expanded=i == 0):
            for m in conv:
                if m["role"] == "system":
                    st.caption("system prompt")
                    st.code(m["text"], language=None, wrap_lines=True, height=120)
                    continue
                with st.chat_message("user" if m["role"] in ("user", "user's tool") else "assistant",
                                     avatar="🛠️" if m["role"] == "tool" else "📱" if m["role"] == "user's tool" else None):
                    if m["text"]:
                        st.markdown(f"**{m['role']}**: " + m["text"].replace("\n", "  \n"))
                    for call in m["calls"]:
                        st.code(call, language="python", wrap_lines=True)
    if row["target"]:
        st.markdown("**target**")
        st.code(row["target"], language=None, wrap_lines=True)


def render_side_by_side(store, runs: pd.DataFrame, task: str, doc: str, choice: dict) -> None:
    if len(runs) < 2:
        return
    st.markdown(f"#### the models on this page, doc `{doc}`")
    found = []
    for run_id in runs["run_id"]:
        frame = store.samples(run_id, task)
        hit = frame[frame["doc_id"] == doc] if len(frame) else frame
        found.append((choice[run_id], hit.iloc[0] if len(hit) else None, dsamples.sample_metrics(frame)))
    rows = -(-len(found) // SIDE_BY_SIDE)
    area = st.container(height=SIDE_BY_SIDE_HEIGHT) if rows > 2 else st.container()  # more rows: scroll inside
    for start in range(0, len(found), SIDE_BY_SIDE):
        cols = area.columns(SIDE_BY_SIDE)
        for box, (model, row, names) in zip(cols, found[start:start + SIDE_BY_SIDE]):
            box.markdown(f"**{model}**")
            if row is None:
                box.caption("(no sample for this doc)")
                continue
            box.markdown(metrics_line(row, names))
            box.code(row["response"] or "(empty)", language=None, wrap_lines=True, height=220)
            if row["extracted"] and row["extracted"] != row["response"]:
                box.caption(f"extracted: {row['extracted'][:200]}")
