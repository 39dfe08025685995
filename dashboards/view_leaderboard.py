"""Leaderboard page: a numeric, sortable models x columns grid (metric and ↑/↓ in each header, CIs in
their own columns, the model column pinned; a click on a cell opens that model's samples of that
task), the honest overall (coverage groups, bootstrap CI), a models x tasks heatmap, per-task bars with
CI whiskers, the cells as text, provenance of every cell and judge figures."""
from __future__ import annotations

from dataclasses import astuple

import streamlit as st

from evalkit.dashboards import board, charts, ranking, rowcontrols, rowpages, suites, tables
from evalkit.dashboards.store import paused_gc
from evalkit.dashboards.urlstate import choose

GRID_KEY = "lb_grid"
HEAT_KEY = "lb_heat"
PAGE_KEY = "lb_page"


def metric_key(col: str) -> str:
    return f"metric::{col}"


def chosen_metric(meta, col: str) -> str:
    """The metric shown for a column (chosen on the leaderboard page, shared with the task page), else
    its first; ``meta``: the page's ``tables.columns(cells)``."""
    metrics = meta.loc[meta["col"] == col, "metrics"]
    options = metrics.iloc[0] if len(metrics) else []
    picked = st.session_state.get(metric_key(col))
    return picked if picked in options else (options[0] if len(options) else None)


def open_samples(entry: str, col: str) -> None:
    """Go to the task view on ``col`` with the samples of ``entry``'s run (a cell click)."""
    ss = st.session_state
    lb = ss.get("_lb_cells")
    if lb is None:
        return
    hit = lb[(lb["entry"] == entry) & (lb["col"] == col)]
    if not len(hit):
        return
    ss["view"] = "Task"
    ss["task_col"] = col
    ss["sample_run"] = str(hit["run_id"].iloc[0])
    ss.pop("sample_doc", None)
    ss["sample_failures"] = False


def _on_grid_select() -> None:
    ss = st.session_state
    sel = (ss.get(GRID_KEY) or {}).get("selection", {}) if isinstance(ss.get(GRID_KEY), dict) else \
        getattr(getattr(ss.get(GRID_KEY), "selection", None), "__dict__", {})
    cells = sel.get("cells") if isinstance(sel, dict) else None
    if not cells:
        return
    row, column = cells[0][0], cells[0][1]
    where = ss.get("_lb_where", {})
    entries = ss.get("_lb_entries", [])
    col = where.get(column)
    if col is not None and 0 <= int(row) < len(entries):
        open_samples(entries[int(row)], col)


def _on_heat_select() -> None:
    ss = st.session_state
    state = ss.get(HEAT_KEY)
    try:
        points = state["selection"]["cell"]
    except (KeyError, TypeError):
        return
    if points:
        open_samples(points[0].get("entry"), points[0].get("col"))


def grid_config(lb: board.Leaderboard) -> dict:
    cfg = {rowpages.PIN: st.column_config.TextColumn(rowpages.PIN, width=28, help="pinned: shown on every page"),
           "#": st.column_config.NumberColumn("#", format="%d", width="small",
                                              help="rank; '=' in the next column: shares it (CIs overlap)"),
           "tie": st.column_config.TextColumn("", width=28),
           "model": st.column_config.TextColumn("model", pinned=True),
           "coverage": st.column_config.TextColumn("coverage", width="small",
                                                   help="overall columns this model has results in"),
           tables.OVERALL: st.column_config.NumberColumn("overall ↑", format="%.3f",
                                                         help="mean win rate within the coverage group"),
           "overall CI": st.column_config.TextColumn("overall 95% CI", width=118)}
    for c, head in lb.headers.items():
        digits = tables._digits(list(lb.values[c].dropna()))
        hib = lb.higher_is_better.get(c, True)
        cfg[head] = st.column_config.NumberColumn(head, format=f"%.{digits}f",
                                                  help=f"{lb.metric_for[c]}: {'higher' if hib else 'lower'} is "
                                                       f"better. Click a cell for that model's samples.")
        cfg[f"{lb.column_labels[c]} CI"] = st.column_config.TextColumn(f"{lb.column_labels[c]} CI", width=118)
    return cfg


@st.cache_data(show_spinner="Ranking the models…", max_entries=16)
def cached_board(_store, sources: tuple, version: int, filters: tuple, metric_for: dict, shown: tuple, sort_by: str,
                 best_first: bool, over: tuple, weighting: str) -> tuple[board.Leaderboard, object]:
    """The whole board and its heatmap frame, built once per store (``sources``: its results folder and
    battle files), data version (``store.version``) and settings: a page, search or pin change slices it
    (``rowpages.board_page``), a view switch reuses it."""
    cells = tables.filter_cells(_store.cells(), tables.Filters(*filters))
    with paused_gc():
        lb = board.build_leaderboard(cells, metric_for, list(shown), sort_by, best_first, list(over) or None,
                                     weighting)
        return lb, board.heat_frame(lb)


def render(store, filters: tables.Filters) -> None:
    st.title("Leaderboard")
    cells = tables.filter_cells(store.cells(), filters)
    if not len(cells):
        st.info("No results match the filters.")
        return
    meta = tables.columns(cells)
    label = dict(zip(meta["col"], meta["col_label"]))
    picked = choose(st, "multiselect", "Columns", list(meta["col"]), "lb_columns", format_func=label.get,
                    placeholder="all columns", help="column = task x task version x prompt hash; empty = all columns")
    shown = picked or list(meta["col"])
    with st.expander("Metric per column"):
        for _, c in meta[meta["col"].isin(shown)].iterrows():
            current = chosen_metric(meta, c["col"])
            choose(st, "selectbox", c["col_label"], c["metrics"], metric_key(c["col"]), default=current)
    metric_for = {c: chosen_metric(meta, c) for c in shown}
    left, mid = st.columns(2)
    sort_by = choose(left, "selectbox", "Sort by", [tables.OVERALL] + shown, "lb_sort", default=tables.OVERALL,
                     format_func=lambda c: "overall (coverage, then mean win rate)" if c == tables.OVERALL
                     else label[c])
    over = choose(mid, "multiselect", "Overall over columns", shown, "lb_overall", format_func=label.get,
                  placeholder="the columns most models share",
                  help="the overall ranks models only against models with results in the same of these columns")
    left, mid = st.columns(2)
    weighting = choose(mid, "radio", "Overall weights", list(ranking.WEIGHTS), "lb_weight", default="equal",
                       horizontal=True, help="items: each column weighs its number of items")
    best_first = left.toggle("Best first", value=True, key="lb_best_first", persist_state="session")
    sources = (str(store.results_dir), *map(str, store.battle_files))
    lb, heat = cached_board(store, sources, store.version, astuple(filters), metric_for, tuple(shown), sort_by,
                            best_first, tuple(over), weighting)
    st.caption(f"{len(lb.display)} models · {len(shown)} columns · {cells['run_id'].nunique()} runs · overall over "
               f"{len(lb.overall_cols)} column(s): " + ", ".join(label[c] for c in lb.overall_cols)
               + ("" if over else " (the columns most models share)"))
    win = rowcontrols.rows(list(lb.display["model"]), PAGE_KEY, cells["label"].dropna())
    render_board(store, lb, rowpages.board_page(lb, win.rows), heat, weighting, {lb.entries[i] for i in win.pinned})


def render_board(store, lb: board.Leaderboard, page: board.Leaderboard, heat, weighting: str, pinned: set) -> None:
    """The page's rows of the board: the grid, the pictures, the cells as text and their provenance."""
    ss = st.session_state
    ss["_lb_cells"] = lb.cells[["entry", "col", "run_id"]].copy()
    ss["_lb_entries"] = list(page.entries)
    ss["_lb_where"] = {lb.headers[c]: c for c in lb.headers} | {f"{lb.column_labels[c]} CI": c for c in lb.headers}
    grid, display = page.grid.rename(columns={"rank": "#"}), page.display
    if pinned:
        marks = [rowpages.PIN if e in pinned else "" for e in page.entries]
        grid, display = grid.assign(**{rowpages.PIN: marks}), display.assign(**{rowpages.PIN: marks})
        grid, display = (f[[rowpages.PIN] + list(f.columns[:-1])] for f in (grid, display))
    st.dataframe(grid, hide_index=True, key=GRID_KEY, width="stretch", column_config=grid_config(lb),
                 height=min(35 * (len(grid) + 1) + 3, 900), on_select=_on_grid_select, selection_mode="single-cell",
                 placeholder="–")
    st.caption(ranking.RANKING_RULE.format(weighting="weighted by their items" if weighting == "items"
                                           else "equally"))
    st.caption(tables.TIE_RULE)
    for note in lb.notes:
        st.info(note)
    render_pictures(page, heat[heat["entry"].isin(page.entries)],
                    [m for e, m in zip(page.entries, page.display["model"]) if e in pinned])
    with st.expander("Cells as text: value [95% CI] n=items #rank"):
        st.dataframe(display, hide_index=True, key="leaderboard", width="stretch")
        st.caption(tables.OVERALL_RULE)
    render_suites(store, len(page.entries))
    render_provenance(store, page)
    render_judges(store)


def render_pictures(lb: board.Leaderboard, heat, pinned: list) -> None:
    """The heatmap and the bars of the rows of ``lb`` (one page); ``heat``: their heatmap cells, coloured
    within the whole board's column; ``pinned``: the models whose bars stand out."""
    if not len(heat):
        return
    st.subheader("Models × tasks")
    models = list(dict.fromkeys(lb.display["model"]))
    st.altair_chart(charts.score_heatmap(heat, models, list(lb.headers.values()),
                                         "colour: place within the column (direction-aware); click a cell for "
                                         "its samples"),
                    key=HEAT_KEY, on_select=_on_heat_select, selection_mode="cell", width="stretch")
    cols = list(lb.headers)
    label = lb.column_labels
    col = choose(st, "selectbox", "Bars for column", cols, "lb_bars", format_func=label.get)
    part = heat[heat["col"] == col]
    st.altair_chart(charts.ci_bars(part, "model", f"{lb.headers[col]} (95% CI)", lb.higher_is_better.get(col, True),
                                   lb.metric_for[col], pinned), key="lb_bars_chart", width="stretch")


def render_suites(store, most: int) -> None:
    frame = suites.suite_rows(store)
    if not len(frame):
        return
    st.subheader("Open LLM Leaderboard v2 (suites)")
    st.caption("Normalised scores (0-100: random guessing is 0) per benchmark and their average, each "
               "value [95% bootstrap CI] n=items; the average needs all six benchmarks.")
    st.dataframe(frame[["model", "suite", *suites.BENCHMARKS, "missing", "run_id"]], hide_index=True,
                 key="lb_suites", width="stretch")
    ranked = frame.dropna(subset=["avg_value"])
    if len(ranked) > most:
        st.caption(f"The chart shows the best {most} of {len(ranked)} averages (the table has them all).")
        ranked = ranked.head(most)
    if len(ranked):
        bars = ranked.rename(columns={"avg_value": "value", "avg_low": "ci_low", "avg_high": "ci_high"})
        st.altair_chart(charts.ci_bars(bars, "label", "leaderboard-v2 average (95% CI)", True, "average"),
                        key="lb_suites_chart", width="stretch")


def render_provenance(store, lb) -> None:
    st.subheader("Provenance")
    prov = tables.provenance(store, lb.cells)
    if not len(prov):
        return
    left, right = st.columns(2)
    model = choose(left, "selectbox", "Model", dict.fromkeys(prov["model"]), "prov_model")
    mine = prov[prov["model"] == model]
    column = choose(right, "selectbox", "Column", mine["column"], "prov_column")
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

