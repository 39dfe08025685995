"""Task page, best-of-N section: runs with ``--reward-model`` (``tasks.<t>.best_of_n``).

Per run (model and reward model) one chart over N = 1, 2, 4, ... (the same N samples, no resampling
per N): a line per method (pass@1, maj@N, oracle@N, the reward model's best-of-N) with its 95% CI
band, then a table of the figures at full N and the reward model's AUROC, a row per run. Records only: no engine, no backend."""
from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from evalkit.dashboards import charts, tables


def render(store, filters: tables.Filters, col: str) -> None:
    # every run that passes the filters: one model's runs with two reward models are two rows, not one "latest"
    cells = tables.filter_cells(store.cells(), replace(filters, latest_only=False))
    curves, heads = tables.best_of_n_figures(store, cells, col, latest_only=filters.latest_only)
    if not len(curves) and not len(heads):
        return
    with st.container(key="best_of_n_section"):
        _section(curves, heads)


def _section(curves: pd.DataFrame, heads: pd.DataFrame) -> None:
    st.subheader("Best-of-N")
    st.caption("Runs with --reward-model: from the same N samples per item, pass@1 (mean correctness), "
               "maj@N (the most common answer), oracle@N (any of the N correct) and rm_best_of@N (the "
               "sample the reward model scores highest), over N = 1, 2, 4, ... with 95% CIs over items; "
               "rm_auroc: how well the rewards tell correct from wrong samples (bootstrap CI).")
    names = tables.BEST_OF_N_METHODS
    for i, (run_id, part) in enumerate(curves.groupby("run_id", sort=False)):
        title = f"{part['model'].iloc[0]} (reward model {part['reward_model'].iloc[0]}): best-of-N accuracy (95% CI)"
        if part["k"].nunique() > 1:
            part = part.assign(method=part["method"].map(lambda m: names.get(m, m)))
            st.altair_chart(charts.passk_curves(part, title, series="method",
                                                y_title="accuracy", x_title="N (samples per item)"),
                            key=f"best_of_n_chart_{i}", width="stretch")
    if len(heads):
        cell = [tables.cell_text(v, lo, hi, n) for v, lo, hi, n in
                zip(heads["value"], heads["ci_low"], heads["ci_high"], heads["n"])]
        keys = ["run_id", "model", "reward_model", "N"]            # one row per run: two reward models stay apart
        wide = heads.assign(cell=cell).pivot_table(index=keys, columns="figure", values="cell", aggfunc="first",
                                                   sort=False).reset_index()
        order = [*keys[1:], *[c for c in wide.columns if c not in keys and c != "rm_auroc"],
                 *(["rm_auroc"] if "rm_auroc" in wide.columns else [])]
        st.dataframe(wide[order], hide_index=True, key="best_of_n_table",
                     column_config={"model": st.column_config.TextColumn("model", pinned=True),
                                    "reward_model": st.column_config.TextColumn("reward model")})
