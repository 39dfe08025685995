"""Streamlit entry point of the evalkit leaderboard.

Started by ``evalkit leaderboard --results DIR`` (loopback only, usage stats off; its server warms
up as it starts: ``serve``), or directly: ``streamlit run app.py -- --results DIR [--battles FILE ...]``
(``sources``). One ``ResultsStore`` is shared by every session and refreshed on each rerun (a
directory listing, at most every 2 s; only changed records are re-read).
"""
from __future__ import annotations

import streamlit as st

from evalkit.dashboards import tables, urlstate
from evalkit.dashboards.sources import settings
from evalkit.dashboards.store import ResultsStore, shared_store
from evalkit.dashboards.urlstate import choose

VIEWS = ("Leaderboard", "Task", "Series", "Retrieval", "Compare", "Arena")


def get_store(results: str, battles: tuple) -> ResultsStore:
    """The process's one store for these sources (the server's warm-up may have loaded it already)."""
    return shared_store(results, battles)


def sidebar_filters(cells) -> tables.Filters:
    """Task family, backend, tag, model and date filters (apply to the leaderboard and task views)."""
    sb = st.sidebar
    sb.subheader("Filters")
    fams = choose(sb, "multiselect", "Task family", sorted(cells["family"].dropna().unique()), "f_family",
                  help="empty = all")
    backends = choose(sb, "multiselect", "Backend", sorted(cells["backend"].dropna().unique()), "f_backend",
                      help="empty = all")
    all_tags = sorted({t for ts in cells["tags"] for t in (ts or ())})
    tags = choose(sb, "multiselect", "Tag", all_tags, "f_tag", help="runs with any of these tags; empty = all")
    split = sb.toggle("A row per model and settings", value=False, key="f_by_settings",
                      help="off: one row per model (name and weights), its newest run in each cell, whatever "
                           "the backend and generation settings; on: a row per backend and generation settings")
    labels = cells["setting_label" if split else "label"]
    models = choose(sb, "multiselect", "Models", sorted(labels.dropna().unique()), "f_models",
                    help="rows to show; empty = all")
    dates = cells["created_at"].dropna()
    since = until = None
    if len(dates):
        lo, hi = dates.min().date(), dates.max().date()
        picked = sb.date_input("Run date", value=(lo, hi), min_value=lo, max_value=hi, key="f_date")
        if isinstance(picked, (tuple, list)) and len(picked) == 2:
            since, until = picked
    latest = sb.checkbox("Newest run per cell only", value=True, key="f_latest",
                         help="several runs can fill one model x column cell; off = every run (task view)")
    return tables.Filters(fams or None, backends or None, tags or None, since, until, latest, models or None, split)


def main() -> None:
    st.set_page_config(page_title="evalkit leaderboard", layout="wide")
    results, battles = settings()
    store = get_store(results, battles)
    store.refresh(max_age=2.0)
    urlstate.sync_in()
    st.sidebar.title("evalkit")
    view = choose(st.sidebar, "radio", "View", VIEWS, "view", default="Leaderboard")
    st.sidebar.caption(f"results: `{results}`" + (f" · battles: {len(battles)} file(s)" if battles else ""))
    for where, err in sorted(store.errors.items()):
        st.sidebar.warning(f"skipped {where}: {err}")
    try:
        render(store, view, results)
    finally:
        urlstate.sync_out()


def render(store, view: str, results: str) -> None:
    cells = store.cells()
    if view == "Arena":
        from evalkit.dashboards import view_arena
        view_arena.render(store)
        return
    if not len(cells):
        st.title("evalkit leaderboard")
        st.info(f"No run records in {results}. Run `evalkit run ... --output {results}` (or `evalkit score`, "
                f"`evalkit arena rate`) and reload.")
        return
    if view == "Compare":
        from evalkit.dashboards import view_compare
        view_compare.render(store)
        return
    filters = sidebar_filters(cells)
    if view == "Leaderboard":
        from evalkit.dashboards import view_leaderboard
        view_leaderboard.render(store, filters)
    elif view == "Series":
        from evalkit.dashboards import view_series
        view_series.render(store, filters)
    elif view == "Retrieval":
        from evalkit.dashboards import view_retrieval
        view_retrieval.render(store, filters)
    else:
        from evalkit.dashboards import view_task
        view_task.render(store, filters)


main()
