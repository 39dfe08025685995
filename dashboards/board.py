"""The leaderboard table (no Streamlit): models x columns with tie-aware ranks per column, the honest
overall (``ranking``), a numeric grid for the page and a text view (``value [CI] n=… #rank``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from . import ranking
from .tables import OVERALL, Filters, _digits, cell_text, columns, filter_cells, fmt, tied_ranks


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
    first = dict(zip(meta["col"], meta["metrics"].str[0]))
    for c in cols:
        metric_for[c] = metric_for.get(c) or first[c]
    pick = _newest_cells(cells, {c: metric_for[c] for c in cols}, cols)
    entries = list(dict.fromkeys(pick["entry"])) if len(pick) else []
    label_of = dict(zip(pick["entry"], pick["label"]))
    labels = {c: meta.set_index("col").loc[c, "col_label"] for c in cols}
    frames, display, hib_of, items = _column_frames(pick, entries, cols)
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
    headers = {c: f"{labels[c]} · {metric_for[c]} {arrow(hib_of.get(c, True))}" for c in cols}
    out, grid = _tables(ov, len(ov_cols), order, rank_col, shared, label_of, frames, display, labels, headers)
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


def default_board(cells: pd.DataFrame) -> Leaderboard:
    """The board a first visit shows: the newest run per cell, every column with its first metric,
    ranked overall (the server's warm-up makes it; the page's own build then finds the ranking made)."""
    cells = filter_cells(cells, Filters())
    cols = list(columns(cells)["col"])
    return build_leaderboard(cells, None, cols)


def _newest_cells(cells: pd.DataFrame, metric_for: dict, cols: list) -> pd.DataFrame:
    """Per column (in ``cols``' order) its chosen metric's newest cell per row, newest rows first."""
    pick = cells[cells["metric"] == cells["col"].map(metric_for)]
    pick = pick.sort_values("created_at", ascending=False, kind="stable").drop_duplicates(["col", "entry"])
    where = {c: i for i, c in enumerate(cols)}
    return pick.iloc[pick["col"].map(where).to_numpy().argsort(kind="stable")]


def _column_frames(pick: pd.DataFrame, entries: list, cols: list) -> tuple:
    """Models x columns frames (values, ranks, CIs, standard errors, n), the cells as text, each
    column's direction and item count, from one pivot per field rather than one lookup per cell."""
    fields = {"values": "value", "lo": "ci_low", "hi": "ci_high", "se": "stderr", "n": "n"}
    if len(pick):
        numbers = pick[["entry", "col"]].assign(**{k: pd.to_numeric(pick[src], errors="coerce").astype(float)
                                                   for k, src in fields.items()})
        both = numbers.pivot(index="entry", columns="col", values=list(fields))
        wide = {k: both[k].reindex(index=entries, columns=cols) for k in fields}
    else:
        wide = {k: pd.DataFrame(index=entries, columns=cols, dtype=float) for k in fields}
    ranks = np.full((len(entries), len(cols)), np.nan)
    display = np.full((len(entries), len(cols)), None, dtype=object)
    firsts = pick.drop_duplicates("col").set_index("col")
    docs = pd.to_numeric(pick["n_docs"], errors="coerce").groupby(pick["col"]).max() if len(pick) else {}
    hib_of, items = {}, {}
    for j, c in enumerate(cols):
        if c not in firsts.index:
            continue
        hib = hib_of[c] = bool(firsts.at[c, "higher_is_better"])
        v, lo, hi, n = (wide[k][c].to_numpy(float) for k in ("values", "lo", "hi", "n"))
        r = ranks[:, j] = tied_ranks(v, lo, hi, hib).to_numpy()
        items[c] = float(docs[c] or 1.0)
        ranked, counts = np.unique(r[~np.isnan(r)], return_counts=True)
        shared = set(ranked[counts > 1].tolist())
        digits = _digits(np.concatenate([v, lo, hi]))
        for i in np.flatnonzero(np.isfinite(v)).tolist():   # a cell without a value reads "–", as no cell
            rk = None if np.isnan(r[i]) else int(r[i])
            display[i, j] = cell_text(v[i], lo[i], hi[i], n[i], rk, rk in shared, digits)
    frames = {**wide, "ranks": pd.DataFrame(ranks, index=entries, columns=cols)}
    return frames, pd.DataFrame(display, index=entries, columns=cols), hib_of, items


def _tables(ov: pd.DataFrame, n_ov: int, order: list, rank_col, shared, label_of: dict, frames: dict,
            display: pd.DataFrame, labels: dict, headers: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The text view and the page's numeric grid, rows in ``order``."""
    o = ov.reindex(order)
    cover = [f"{c}/{n_ov}" for c in o["coverage"]]
    ranks, ties = rank_col.reindex(order), shared.reindex(order).fillna(False).astype(bool)
    rank_txt = ["–" if pd.isna(r) else f"{int(r)}{'=' if t else ''}" for r, t in zip(ranks, ties)]
    models = [label_of[e] for e in order]
    out = pd.DataFrame({"rank": rank_txt, "model": models,
                        OVERALL: [_overall_text(*x) for x in zip(o["score"], o["ci_low"], o["ci_high"], o["coverage"])],
                        "coverage": cover}, index=range(len(order)))
    grid = pd.DataFrame({"rank": ranks.to_numpy(), "tie": ["=" if t else "" for t in ties], "model": models,
                         "coverage": cover, OVERALL: o["score"].to_numpy(),
                         "overall CI": [_ci_text(a, b, 3) for a, b in zip(o["ci_low"], o["ci_high"])]})
    at = display.index.get_indexer(order)
    shown = display.to_numpy()[at]
    for j, c in enumerate(display.columns):
        if c not in labels:
            continue
        out[labels[c]] = [x if isinstance(x, str) else "–" for x in shown[:, j]]
        v = frames["values"][c].to_numpy(float)
        digits = _digits(v)
        grid[headers[c]] = v[at]
        lo, hi = frames["lo"][c].to_numpy(float)[at], frames["hi"][c].to_numpy(float)[at]
        grid[f"{labels[c]} CI"] = [_ci_text(a, b, digits) for a, b in zip(lo.tolist(), hi.tolist())]
    return out, grid


def _ci_text(lo, hi, digits: int) -> str:
    if lo is None or hi is None or lo != lo or hi != hi:          # None or NaN
        return ""
    return f"[{fmt(lo, digits)}, {fmt(hi, digits)}]"


def _overall_text(score, lo, hi, coverage) -> str:
    if pd.isna(score):
        return "–" if coverage == 0 else "– (alone in its coverage)"
    return f"{fmt(score, 3)} [{fmt(lo, 3)}, {fmt(hi, 3)}]"


def heat_frame(lb: Leaderboard) -> pd.DataFrame:
    """Long frame for the models x columns heatmap: per cell the value, its CI, its column rank and a
    0..1 colour (1 = best in the column, direction-aware)."""
    names = ["model", "column", "col", "value", "goodness", "text", "ci_low", "ci_high", "rank", "entry"]
    model_of = dict(zip(lb.entries, lb.display["model"]))
    parts = []
    for c in lb.column_labels:
        v = lb.values[c].reindex(lb.entries)
        known = v.dropna()
        if not len(known):
            continue
        lo_, hi_ = known.min(), known.max()
        norm = pd.Series(0.5, index=known.index) if hi_ == lo_ else (known - lo_) / (hi_ - lo_)
        if not lb.higher_is_better.get(c, True):
            norm = 1 - norm
        ranks = lb.ranks[c].reindex(known.index)
        parts.append(pd.DataFrame({
            "model": [model_of[e] for e in known.index], "column": lb.headers[c], "col": c,
            "value": known.to_numpy(float), "goodness": norm.to_numpy(float), "text": [fmt(x) for x in known],
            "ci_low": lb.ci_low[c].reindex(known.index).to_numpy(),
            "ci_high": lb.ci_high[c].reindex(known.index).to_numpy(),
            "rank": [None if pd.isna(r) else int(r) for r in ranks], "entry": list(known.index)}))
    return pd.concat(parts, ignore_index=True)[names] if parts else pd.DataFrame(columns=names)
