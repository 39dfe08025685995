"""The rows control of the leaderboard and task pages (Streamlit): rows per page, a model search,
pinned models and page navigation (``rowpages`` picks the rows). Kept in the URL (``urlstate``) and
shared by both pages; each page keeps its own page number."""
from __future__ import annotations

from typing import Optional, Sequence

import streamlit as st

from evalkit.dashboards import rowpages
from evalkit.dashboards.urlstate import choose

SIZE_KEY, SEARCH_KEY, PINS_KEY = "lb_rows", "lb_search", "lb_pins"


def _first_page(page_key: str) -> None:
    st.session_state[page_key] = 1


def _step(page_key: str, by: int) -> None:
    current = st.session_state.get(page_key)
    st.session_state[page_key] = (current if isinstance(current, int) else 1) + by


def rows(names: Sequence[str], page_key: str, models: Sequence[str],
         keys: Optional[Sequence[str]] = None) -> rowpages.Window:
    """Draw the controls and return the rows of ``names`` (in order) to show. ``models``: the pinnable
    models (every model the filters keep, so a pin survives a page or view switch); ``keys``: what a pin
    matches in each row (default ``names``)."""
    size_box, search_box, pins_box = st.columns([1, 2, 3])
    size = choose(size_box, "selectbox", "Rows per page", rowpages.SIZES, SIZE_KEY, default=rowpages.DEFAULT_SIZE,
                  on_change=_first_page, args=(page_key,))
    search = search_box.text_input("Search models", key=SEARCH_KEY, placeholder="part of a model name",
                                   on_change=_first_page, args=(page_key,), persist_state="session",
                                   help="rows whose model name contains this text (any case)")
    pins = choose(pins_box, "multiselect", "Pinned models", sorted(set(models)), PINS_KEY,
                  placeholder="always shown, on top",
                  help="these models stay on top of the table and charts whatever the page or search")
    current = st.session_state.get(page_key)
    win = rowpages.window(names, size, current if isinstance(current, int) else 1, search, pins, keys)
    if win.pages > 1:
        back, pick, forward, _ = st.columns([1, 3, 1, 5], vertical_alignment="bottom")
        back.button("◀ previous", key=f"{page_key}_back", disabled=win.page == 1, on_click=_step,
                    args=(page_key, -1), width="stretch")
        choose(pick, "selectbox", "Page", range(1, win.pages + 1), page_key, default=win.page,
               format_func=lambda p: rowpages.page_label(p, size, win.matches))
        forward.button("next ▶", key=f"{page_key}_forward", disabled=win.page == win.pages, on_click=_step,
                       args=(page_key, 1), width="stretch")
    st.caption(win.caption(search))
    return win
