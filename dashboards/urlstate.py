"""The page state in the URL (``st.query_params``), so a link reproduces a view and Back/Forward work.

``sync_in`` (start of a run) copies the URL into the widgets' session state when the URL differs from
what the app last wrote (first load, a pasted link, Back or Forward); ``sync_out`` (end of a run)
writes the state back, which pushes a browser history entry when something changed. ``choose``
creates a widget whose stored value is checked against its options first (a stale or hand-edited
link falls back to the default instead of failing) and survives switching views.
"""
from __future__ import annotations

import streamlit as st

# URL parameter -> (session key, is a list)
PARAMS = {"view": ("view", False), "family": ("f_family", True), "backend": ("f_backend", True),
          "tag": ("f_tag", True), "models": ("f_models", True), "cols": ("lb_columns", True),
          "sort": ("lb_sort", False), "overall": ("lb_overall", True), "weight": ("lb_weight", False),
          "task": ("task_col", False), "run": ("sample_run", False), "doc": ("sample_doc", False),
          "failures": ("sample_failures", False), "series": ("series_name", False),
          "rows": ("lb_rows", False), "search": ("lb_search", False), "pin": ("lb_pins", True),
          "page": ("lb_page", False), "task_page": ("task_page", False)}
NUMBERS = ("lb_rows", "lb_page", "task_page")       # whole numbers (a hand-edited non-number: the default)
METRIC = "metric"               # the task view's metric: key task_metric::<task col>


def metric_key(col: str) -> str:
    return f"task_metric::{col}"


def _parse(key: str, value: str):
    if key == "sample_failures":
        return value == "1"
    if key in NUMBERS:
        return int(value) if value.isdigit() else None
    return value


def _render(key: str, value):
    if isinstance(value, bool):
        return "1" if value else None
    return None if value in (None, "") else str(value)


def sync_in() -> None:
    ss = st.session_state
    url = {k: st.query_params.get_all(k) for k in st.query_params}
    if url == ss.get("_url"):
        return
    for param, (key, is_list) in PARAMS.items():
        vals = url.get(param)
        if vals:
            ss[key] = list(vals) if is_list else _parse(key, vals[0])
        elif key in ss and key != "view":
            del ss[key]
    if url.get(METRIC) and url.get("task"):
        ss[metric_key(url["task"][0])] = url[METRIC][0]
    if not url.get("view") and ss.get("_url") is not None:
        ss["view"] = "Leaderboard"
    ss["_url"] = url


def sync_out() -> None:
    ss = st.session_state
    out: dict = {}
    for param, (key, is_list) in PARAMS.items():
        v = ss.get(key)
        if is_list:
            if v:
                out[param] = [str(x) for x in v]
        else:
            text = _render(key, v)
            if text is not None:
                out[param] = [text]
    if ss.get("task_col") and ss.get(metric_key(ss["task_col"])):
        out[METRIC] = [str(ss[metric_key(ss["task_col"])])]
    if out != ss.get("_url"):
        ss["_url"] = out
        st.query_params.from_dict({k: v if len(v) > 1 else v[0] for k, v in out.items()})


def choose(container, widget: str, label: str, options, key: str, default=None, **kw):
    """``container.<widget>(label, options, key=key)`` with the stored value checked first."""
    ss = st.session_state
    options = list(options)
    if widget == "multiselect":
        cur = ss.get(key, default or [])
        ss[key] = [v for v in (cur if isinstance(cur, (list, tuple)) else [cur]) if v in options]
    elif ss.get(key) not in options:
        if key in ss or default is not None:
            ss[key] = default if default in options else (options[0] if options else None)
    return getattr(container, widget)(label, options, key=key, persist_state="session", **kw)
