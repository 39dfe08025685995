"""The leaderboard table (no Streamlit): models x columns with tie-aware ranks per column, the honest
overall (``ranking``), a numeric grid for the page and a text view (``value [CI] n=… #rank``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from . import ranking
from .tables import OVERALL, _digits, cell_text, columns, default_metric, fmt, tied_ranks


@dataclass
class Leaderboard:
    display: pd.DataFrame                     # strings, one row per model (the text view)
    values: pd.DataFrame                      # numbers behind it (value per column, overall)
    ranks: pd.DataFrame                       # tie-aware rank per column
    cells: pd.DataFrame                       # the chosen cells (one per model x column), with run ids
    column_labels: dict                       # col id -> shown label
    notes: list = field(default_factory=list)
    grid: Optional[pd.DataFrame] = None       # numeric page table: rank, model, coverage, overall, CIs, columns
    headers: dict = field(default_factory=dict)        # col id -> grid header "label · metric ↑"
    overall: Optional[pd.DataFrame] = None    # ranking.overall_ranking frame (index: entry)
    overall_cols: list = field(default_factory=list)
    higher_is_better: dict = field(default_factory=dict)
    metric_for: dict = field(default_factory=dict)
    entries: list = field(default_factory=list)         # row order (entry keys)
    ci_low: Optional[pd.DataFrame] = None
    ci_high: Optional[pd.DataFrame] = None


def arrow(hib: bool) -> str:
    return "↑" if hib else "↓"


def build_leaderboard(cells: pd.DataFrame, metric_for: Optional[dict] = None, cols: Optional[Sequence[str]] = None,
                      sort_by: str = OVERALL, best_first: bool = True, overall_cols: Optional[Sequence[str]] = None,
                      weighting: str = "equal", rounds: int = 1000) -> Leaderboard:
    """Models x columns. ``metric_for``: col id -> metric (default: the record's first metric);
    ``cols``: the columns to show (default all); ``sort_by``: a col id or ``"overall"``;
    ``overall_cols``: the columns the overall ranks over (default ``ranking.shared_columns``);
    ``weighting``: ``equal`` or ``items`` (each column weighs its item count)."""
    metric_for = dict(metric_for or {})
    meta = columns(cells)
    all_cols = list(meta["col"])
    cols = [c for c in (cols if cols is not None else all_cols) if c in all_cols]
    chosen = []
    for c in cols:
        metric_for[c] = metric_for.get(c) or default_metric(cells, c)
        sel = cells[(cells["col"] == c) & (cells["metric"] == metric_for[c])]
        chosen.append(sel.sort_values("created_at", ascending=False, kind="stable").drop_duplicates("entry"))
    pick = pd.concat(chosen) if chosen else cells.iloc[0:0]
    entries = list(dict.fromkeys(pick["entry"])) if len(pick) else []
    label_of = dict(zip(pick["entry"], pick["label"]))
    labels = {c: meta.set_index("col").loc[c, "col_label"] for c in cols}
    frames = {k: pd.DataFrame(index=entries, columns=cols, dtype=float)
              for k in ("values", "ranks", "lo", "hi", "se", "n")}
    display = pd.DataFrame(index=entries, columns=cols, dtype=object)
    hib_of, items = {}, {}
    for c in cols:
        sel = pick[pick["col"] == c].set_index("entry")
        if not len(sel):
            continue
        hib = hib_of[c] = bool(sel["higher_is_better"].iloc[0])
        r = tied_ranks(sel["value"], sel["ci_low"], sel["ci_high"], hib)
        counts = r.value_counts()
        digits = _digits(list(sel["value"]) + list(sel["ci_low"]) + list(sel["ci_high"]))
        for k, src in (("values", "value"), ("lo", "ci_low"), ("hi", "ci_high"), ("se", "stderr"), ("n", "n")):
            frames[k].loc[sel.index, c] = pd.to_numeric(sel[src], errors="coerce").astype(float)
        frames["ranks"].loc[sel.index, c] = r
        items[c] = float(pd.to_numeric(sel["n_docs"], errors="coerce").max() or 1.0)
        for e, row in sel.iterrows():
            tie = not pd.isna(r[e]) and counts.get(r[e], 0) > 1
            display.loc[e, c] = cell_text(row["value"], row["ci_low"], row["ci_high"], row["n"],
                                          None if pd.isna(r[e]) else int(r[e]), tie, digits)
    values = frames["values"]
    ov_cols = [c for c in (overall_cols if overall_cols else ranking.shared_columns(values)) if c in cols]
    weights = items if weighting == "items" else None
    ov = ranking.overall_ranking(values, frames["lo"], frames["hi"], hib_of, ov_cols, weights, frames["se"],
                                 rounds=rounds)
    values[OVERALL] = ov["score"]
    if sort_by == OVERALL or sort_by not in cols:
        order = ranking.ordered(ov)
        if not best_first:
            order = order[::-1]
        rank_col, shared = ov["rank"], ov["shared"]
    else:
        hib = hib_of.get(sort_by, True)
        order = list(values[sort_by].sort_values(ascending=(not hib) if best_first else hib, na_position="last",
                                                 kind="stable").index)
        rank_col = frames["ranks"][sort_by]
        shared = rank_col.map(rank_col.value_counts()).fillna(0) > 1
    n_ov = len(ov_cols)
    cover = {e: f"{ov.at[e, 'coverage']}/{n_ov}" for e in entries}
    rank_txt = [("–" if pd.isna(rank_col.get(e)) else f"{int(rank_col[e])}{'=' if shared.get(e) else ''}")
                for e in order]
    out = pd.DataFrame({"rank": rank_txt, "model": [label_of[e] for e in order],
                        OVERALL: [_overall_text(ov.loc[e]) for e in order],
                        "coverage": [cover[e] for e in order]}, index=range(len(order)))
    headers = {c: f"{labels[c]} · {metric_for[c]} {arrow(hib_of.get(c, True))}" for c in cols}
    grid = pd.DataFrame({"rank": [rank_col.get(e) for e in order], "tie": ["=" if shared.get(e) else "" for e in order],
                         "model": out["model"].to_numpy(), "coverage": [cover[e] for e in order],
                         OVERALL: [ov.at[e, "score"] for e in order],
                         "overall CI": [_ci_text(ov.at[e, "ci_low"], ov.at[e, "ci_high"], 3) for e in order]})
    for c in cols:
        out[labels[c]] = [display.loc[e, c] if isinstance(display.loc[e, c], str) else "–" for e in order]
        digits = _digits(list(values[c].dropna()))
        grid[headers[c]] = [values.at[e, c] for e in order]
        grid[f"{labels[c]} CI"] = [_ci_text(frames["lo"].at[e, c], frames["hi"].at[e, c], digits) for e in order]
    notes = [n for n in meta.set_index("col").loc[cols, "col_note"].dropna().unique()] if cols else []
    superseded = cells[(cells["col"].isin(cols)) & (cells.get("n_runs", 1) > 1)] if "n_runs" in cells else []
    if len(superseded):
        notes.append(f"{superseded.drop_duplicates(['entry', 'col'])['entry'].size} cells have several runs; "
                     f"the newest is shown (see Provenance)")
    mixed = cells[(cells["col"].isin(cols)) & (cells["n_settings"] > 1)] if "n_settings" in cells else []
    if len(mixed):
        notes.append(f"{mixed['entry'].nunique()} models have runs under several settings (backend, generation); "
                     f"a row is a model and its newest run fills each cell: switch on 'A row per model and "
                     f"settings' in the sidebar to see each setting as its own row")
    return Leaderboard(out, values.loc[order], frames["ranks"].loc[order], pick, labels, notes, grid, headers, ov,
                       ov_cols, hib_of, metric_for, order, frames["lo"].loc[order], frames["hi"].loc[order])


def _ci_text(lo, hi, digits: int) -> str:
    if lo is None or hi is None or pd.isna(lo) or pd.isna(hi):
        return ""
    return f"[{fmt(lo, digits)}, {fmt(hi, digits)}]"


def _overall_text(row) -> str:
    if pd.isna(row["score"]):
        return "–" if row["coverage"] == 0 else "– (alone in its coverage)"
    return f"{fmt(row['score'], 3)} [{fmt(row['ci_low'], 3)}, {fmt(row['ci_high'], 3)}]"


def heat_frame(lb: Leaderboard) -> pd.DataFrame:
    """Long frame for the models x columns heatmap: per cell the value, its CI, its column rank and a
    0..1 colour (1 = best in the column, direction-aware)."""
    rows = []
    for c, label in lb.column_labels.items():
        v = lb.values[c]
        known = v.dropna()
        lo_, hi_ = (known.min(), known.max()) if len(known) else (np.nan, np.nan)
        for e, model in zip(lb.entries, lb.display["model"]):
            x = v.get(e)
            if x is None or pd.isna(x):
                continue
            norm = 0.5 if hi_ == lo_ else (x - lo_) / (hi_ - lo_)
            if not lb.higher_is_better.get(c, True):
                norm = 1 - norm
            r = lb.ranks.at[e, c]
            rows.append({"model": model, "column": lb.headers[c], "col": c, "value": float(x), "goodness": norm,
                         "text": fmt(x),
                         "ci_low": lb.ci_low.at[e, c], "ci_high": lb.ci_high.at[e, c],
                         "rank": None if pd.isna(r) else int(r), "entry": e})
    return pd.DataFrame(rows, columns=["model", "column", "col", "value", "goodness", "text", "ci_low", "ci_high",
                                       "rank", "entry"])
