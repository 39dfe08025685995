"""Leaderboard tables from ``data.ResultsStore`` frames: ranks with statistical ties, the overall
column, cell text, filters and provenance (no Streamlit).

Rules (also shown on the page):

- **Rank (ties)**: per column, models are sorted best first; the best unranked model leads a group
  and every following model whose 95% CI overlaps the *leader's* CI shares the leader's rank; the
  first one that does not overlap starts the next group, ranked by its position (1, 1, 3, ...).
  A value without a CI is its own one-point interval.
- **Overall**: mean win rate (as in HELM): in each shown column, the share of the other models
  with a value there that this model beats (ties count half), averaged over the shown columns
  where it has a value; columns with a single model do not count.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np
import pandas as pd

TIE_RULE = ("Ranks: per column, sorted best first, a model shares the rank of its group's leader while its "
            "95% CI overlaps the leader's CI; the first model that does not overlap leads the next group "
            "and takes its position as rank (1, 1, 3 …). '=' marks a shared rank.")
OVERALL_RULE = ("Overall = mean win rate (HELM's aggregate): in each shown column, the share of the other models "
                "with a value there that this model beats (ties count ½), averaged over the shown columns where "
                "it has a value; columns with one model don't count. It is not a statistical test; 'cols' says "
                "how many columns it averages.")
OVERALL = "overall"


def fmt(x, digits: Optional[int] = None) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    x = float(x)
    if digits is None:
        digits = 1 if abs(x) >= 100 else 2 if abs(x) >= 10 else 3
    return f"{x:.{digits}f}"


def _digits(values: Sequence) -> int:
    vals = [abs(float(v)) for v in values if v is not None and np.isfinite(v)]
    top = max(vals) if vals else 0.0
    return 1 if top >= 100 else 2 if top >= 10 else 3


def cell_text(value, lo, hi, n, rank: Optional[int] = None, shared: bool = False, digits: Optional[int] = None) -> str:
    """``0.540 [0.404, 0.670] n=50 #1=``: value, 95% CI, n and (tie-aware) rank."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    ci = f" [{fmt(lo, digits)}, {fmt(hi, digits)}]" if lo is not None and hi is not None and not (
        pd.isna(lo) or pd.isna(hi)) else " [no CI]"
    nn = f" n={int(n)}" if n is not None and not pd.isna(n) else ""
    rk = f" #{rank}{'=' if shared else ''}" if rank is not None else ""
    return f"{fmt(value, digits)}{ci}{nn}{rk}"


def tied_ranks(values, ci_low, ci_high, higher_is_better: bool = True) -> pd.Series:
    """Ranks where statistically tied models share a place (the group-leader rule, module doc).
    NaN values get no rank (NaN)."""
    v = pd.Series(values, dtype=float)
    lo = pd.Series(ci_low, dtype=float, index=v.index).fillna(v)
    hi = pd.Series(ci_high, dtype=float, index=v.index).fillna(v)
    ranks = pd.Series(np.nan, index=v.index)
    known = v.dropna()
    order = known.sort_values(ascending=not higher_is_better, kind="stable").index
    leader = None
    for pos, idx in enumerate(order, start=1):
        if leader is not None and lo[idx] <= hi[leader] and lo[leader] <= hi[idx]:
            ranks[idx] = ranks[leader]
            continue
        leader = idx
        ranks[idx] = pos
    return ranks


def win_rates(values, higher_is_better: bool = True) -> pd.Series:
    """Per model: share of the other models (with values) it beats, ties counting half."""
    v = pd.Series(values, dtype=float)
    known = v.dropna()
    out = pd.Series(np.nan, index=v.index)
    m = len(known)
    if m < 2:
        return out
    x = known.to_numpy() * (1 if higher_is_better else -1)
    beats = (x[:, None] > x[None, :]).sum(axis=1)
    ties = (x[:, None] == x[None, :]).sum(axis=1) - 1
    out[known.index] = (beats + 0.5 * ties) / (m - 1)
    return out


@dataclass
class Filters:
    families: Optional[Sequence[str]] = None
    backends: Optional[Sequence[str]] = None
    tags: Optional[Sequence[str]] = None
    since: Optional[object] = None        # date or Timestamp, inclusive
    until: Optional[object] = None        # inclusive (the whole day)
    latest_only: bool = True


def _utc(t) -> pd.Timestamp:
    t = pd.Timestamp(t)
    return t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC")


def filter_cells(cells: pd.DataFrame, f: Filters) -> pd.DataFrame:
    keep = pd.Series(True, index=cells.index)
    if f.families:
        keep &= cells["family"].isin(list(f.families))
    if f.backends:
        keep &= cells["backend"].isin(list(f.backends))
    if f.tags:
        wanted = set(f.tags)
        keep &= cells["tags"].map(lambda t: bool(wanted & set(t or ())))
    if f.since is not None:
        keep &= cells["created_at"] >= _utc(f.since)
    if f.until is not None:
        keep &= cells["created_at"] < _utc(f.until) + pd.Timedelta(days=1)
    out = cells[keep]
    if f.latest_only and len(out):
        out = out.sort_values("created_at", ascending=False, kind="stable").drop_duplicates(
            ["entry", "col", "metric"], keep="first")
    return out


def columns(cells: pd.DataFrame) -> pd.DataFrame:
    """One row per leaderboard column: col id, label, task, family, metrics (record order), note."""
    if not len(cells):
        return pd.DataFrame(columns=["col", "col_label", "task", "family", "metrics", "col_note"])
    rows = []
    for col, grp in cells.groupby("col", sort=False):
        metrics = list(grp.sort_values("metric_order", kind="stable")["metric"].drop_duplicates())
        first = grp.iloc[0]
        rows.append({"col": col, "col_label": first["col_label"], "task": first["task"], "family": first["family"],
                     "metrics": metrics, "col_note": first.get("col_note")})
    out = pd.DataFrame(rows)
    return out.sort_values(["family", "col_label"], kind="stable").reset_index(drop=True)


def default_metric(cells: pd.DataFrame, col: str) -> Optional[str]:
    grp = cells[cells["col"] == col]
    if not len(grp):
        return None
    return str(grp.sort_values("metric_order", kind="stable")["metric"].iloc[0])


@dataclass
class Leaderboard:
    display: pd.DataFrame                     # strings, one row per model, shown as is
    values: pd.DataFrame                      # numbers behind it (value per column, overall)
    ranks: pd.DataFrame                       # tie-aware rank per column
    cells: pd.DataFrame                       # the chosen cells (one per model x column), with run ids
    column_labels: dict                       # col id -> shown label
    notes: list = field(default_factory=list)


def build_leaderboard(cells: pd.DataFrame, metric_for: Optional[dict] = None, cols: Optional[Sequence[str]] = None,
                      sort_by: str = OVERALL, best_first: bool = True) -> Leaderboard:
    """Models x columns. ``metric_for``: col id -> metric (default: the record's first metric);
    ``cols``: the columns to show (default all); ``sort_by``: a col id or ``"overall"``."""
    metric_for = dict(metric_for or {})
    meta = columns(cells)
    all_cols = list(meta["col"])
    cols = [c for c in (cols if cols is not None else all_cols) if c in all_cols]
    chosen = []
    for c in cols:
        metric = metric_for.get(c) or default_metric(cells, c)
        sel = cells[(cells["col"] == c) & (cells["metric"] == metric)]
        sel = sel.sort_values("created_at", ascending=False, kind="stable").drop_duplicates("entry")
        chosen.append(sel)
    pick = pd.concat(chosen) if chosen else cells.iloc[0:0]
    entries = list(dict.fromkeys(pick["entry"])) if len(pick) else []
    label_of = dict(zip(pick["entry"], pick["label"]))
    labels = {c: meta.set_index("col").loc[c, "col_label"] for c in cols}
    values = pd.DataFrame(index=entries, columns=cols, dtype=float)
    ranks = pd.DataFrame(index=entries, columns=cols, dtype=float)
    shared = pd.DataFrame(False, index=entries, columns=cols)
    display = pd.DataFrame(index=entries, columns=cols, dtype=object)
    wins = pd.DataFrame(index=entries, columns=cols, dtype=float)
    hib_of = {}
    for c in cols:
        sel = pick[pick["col"] == c].set_index("entry")
        if not len(sel):
            continue
        hib = bool(sel["higher_is_better"].iloc[0])
        hib_of[c] = hib
        r = tied_ranks(sel["value"], sel["ci_low"], sel["ci_high"], hib)
        counts = r.value_counts()
        digits = _digits(list(sel["value"]) + list(sel["ci_low"]) + list(sel["ci_high"]))
        values.loc[sel.index, c] = sel["value"].astype(float)
        ranks.loc[sel.index, c] = r
        wins.loc[sel.index, c] = win_rates(sel["value"], hib)
        for e, row in sel.iterrows():
            tie = not pd.isna(r[e]) and counts.get(r[e], 0) > 1
            shared.loc[e, c] = tie
            display.loc[e, c] = cell_text(row["value"], row["ci_low"], row["ci_high"], row["n"],
                                          None if pd.isna(r[e]) else int(r[e]), tie, digits)
    overall = wins.mean(axis=1, skipna=True)
    ncols = wins.notna().sum(axis=1)
    values[OVERALL] = overall
    if sort_by == OVERALL or sort_by not in cols:
        key = overall
        hib = True
    else:
        key, hib = values[sort_by], hib_of.get(sort_by, True)
    ascending = (not hib) if best_first else hib
    order = key.sort_values(ascending=ascending, na_position="last", kind="stable").index
    if sort_by == OVERALL or sort_by not in cols:
        rank_col = overall.rank(ascending=False, method="min")
    else:
        rank_col = ranks[sort_by]
    out = pd.DataFrame({"rank": [_rank_text(rank_col.get(e), rank_col) for e in order],
                        "model": [label_of[e] for e in order],
                        OVERALL: [f"{fmt(overall[e], 3)} ({int(ncols[e])} cols)" if ncols[e] else "–"
                                  for e in order]}, index=range(len(order)))
    for c in cols:
        out[labels[c]] = [display.loc[e, c] if isinstance(display.loc[e, c], str) else "–" for e in order]
    notes = [n for n in meta.set_index("col").loc[cols, "col_note"].dropna().unique()] if cols else []
    superseded = cells[(cells["col"].isin(cols)) & (cells.get("n_runs", 1) > 1)] if "n_runs" in cells else []
    if len(superseded):
        notes.append(f"{superseded.drop_duplicates(['entry', 'col'])['entry'].size} cells have several runs; "
                     f"the newest is shown (see Provenance)")
    return Leaderboard(out, values.loc[order], ranks.loc[order], pick, labels, notes)


def _rank_text(r, col: pd.Series) -> str:
    if r is None or pd.isna(r):
        return "–"
    tie = (col == r).sum() > 1
    return f"{int(r)}{'=' if tie else ''}"


# ---- provenance -----------------------------------------------------------------------------------
PROVENANCE_COLUMNS = ["model", "column", "metric", "run_id", "created_at", "backend", "model_spec",
                      "identity_hash", "task_version", "prompt_hash", "dataset_fingerprint", "n_docs",
                      "generation", "seed", "limit", "evalkit_version", "git_sha", "judge", "runs_in_cell", "path"]


def provenance(store, cells: pd.DataFrame) -> pd.DataFrame:
    """Where each shown cell comes from: one row per model x column (the run actually shown)."""
    if not len(cells):
        return pd.DataFrame(columns=PROVENANCE_COLUMNS)
    runs = store.runs().set_index("run_id")
    recs = store.records()
    rows = []
    for _, c in cells.drop_duplicates(["entry", "col"]).iterrows():
        run = runs.loc[c["run_id"]]
        t = recs[c["run_id"]].tasks.get(c["task"], {})
        rows.append({"model": c["label"], "column": c["col_label"], "metric": c["metric"], "run_id": c["run_id"],
                     "created_at": str(run["created_at"]), "backend": run["backend"], "model_spec": run["spec"],
                     "identity_hash": run["identity_hash"], "task_version": c["version"],
                     "prompt_hash": c["prompt_hash"], "dataset_fingerprint": t.get("dataset_fingerprint"),
                     "n_docs": c["n_docs"], "generation": run["gen"], "seed": run["seed"], "limit": run["limit"],
                     "evalkit_version": run["evalkit_version"], "git_sha": run["git_sha"], "judge": run["judge"],
                     "runs_in_cell": int(c.get("n_runs", 1)), "path": run["path"]})
    return pd.DataFrame(rows, columns=PROVENANCE_COLUMNS)


# ---- breakdowns -----------------------------------------------------------------------------------
BREAKDOWN_COLUMNS = ["model", "run_id", "dimension", "group", "metric", "value", "ci_low", "ci_high", "n"]


def breakdowns(store, cells: pd.DataFrame, col: str) -> pd.DataFrame:
    """Per-group results of one column's runs: MMLU subjects/categories, MATH levels, MT-Bench
    categories (``dim:group`` keys; a key without ``:`` is a category) and turns (``*_turnN`` metrics)."""
    sel = cells[cells["col"] == col].drop_duplicates("entry")
    rows = []
    recs = store.records()
    for _, c in sel.iterrows():
        t = recs[c["run_id"]].tasks.get(c["task"], {})
        for key, metrics in (t.get("breakdowns") or {}).items():
            dim, group = key.split(":", 1) if ":" in key else ("category", key)
            for m, mv in (metrics or {}).items():
                if isinstance(mv, dict):
                    rows.append({"model": c["label"], "run_id": c["run_id"], "dimension": dim, "group": group,
                                 "metric": m, "value": mv.get("value"), "ci_low": mv.get("ci_low"),
                                 "ci_high": mv.get("ci_high"), "n": mv.get("n")})
        for m, mv in (t.get("metrics") or {}).items():
            base, sep, turn = m.rpartition("_turn")
            if sep and turn.isdigit() and isinstance(mv, dict):
                rows.append({"model": c["label"], "run_id": c["run_id"], "dimension": "turn", "group": turn,
                             "metric": base, "value": mv.get("value"), "ci_low": mv.get("ci_low"),
                             "ci_high": mv.get("ci_high"), "n": mv.get("n")})
    return pd.DataFrame(rows, columns=BREAKDOWN_COLUMNS)


# ---- judges ---------------------------------------------------------------------------------------
JUDGE_FIGURES = ("n_judgments", "parse_failures", "parse_failure_rate", "swap_disagreement_rate",
                 "first_position_win_rate", "unresolved_pairs", "longer_answer_win_rate", "length_spearman")


def judge_reliability(store) -> pd.DataFrame:
    """Judge figures wherever a record has them: MT-Bench (``extra.judge.single``/``pairwise``) and
    judged arenas (``extra.judge_reliability``)."""
    rows = []
    for rec in store.records().values():
        judge = (rec.data.get("judge") or {}).get("name")
        for task, t in rec.tasks.items():
            extra = t.get("extra") or {}
            found = []
            if isinstance(extra.get("judge_reliability"), dict):
                found.append(("pairwise", extra["judge_reliability"]))
            jd = extra.get("judge") if isinstance(extra.get("judge"), dict) else {}
            for mode in ("single", "pairwise"):
                if isinstance(jd.get(mode), dict):
                    found.append((mode, jd[mode]))
            for mode, figs in found:
                rows.append({"run_id": rec.run_id, "model": rec.model.get("name"), "task": task, "mode": mode,
                             "judge": judge or jd.get("name"), **{k: figs.get(k) for k in JUDGE_FIGURES}})
    return pd.DataFrame(rows, columns=["run_id", "model", "task", "mode", "judge", *JUDGE_FIGURES])
