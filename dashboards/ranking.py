"""The overall ranking, honestly (no Streamlit).

- It is computed over a chosen set of columns (default: ``shared_columns``, the columns most models
  share) and a model is ranked only against models that cover *the same* columns of that set
  (its coverage group); groups are listed by coverage, the full group first. A model alone in its
  group has no score (there is nobody to compare with on the same tasks).
- Score: mean win rate within the group (in each column, the share of the group's other models it
  beats, ties ½), averaged over the columns, equally or weighted by the columns' item counts.
- Its 95% CI is a parametric bootstrap: each cell redrawn from a normal with the cell's standard
  error (``stderr``, else CI width / 3.92), the win rates recomputed, percentiles 2.5 and 97.5.
- Ranks: the same rule as every column (``tables.tied_ranks``): '=' means the CI overlaps the CI of
  the group's leader, nothing else, anywhere.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd


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


WEIGHTS = ("equal", "items")
RANKING_RULE = ("Overall: ranked only among models that cover the same overall columns (coverage); score = mean "
                "win rate in that group (share of the group's other models beaten per column, ties ½), averaged "
                "over the columns {weighting}; 95% CI from 1,000 bootstrap redraws of every cell within its CI; "
                "'=' = shares a rank because its 95% CI overlaps its group leader's, as in every column.")
OVERALL_COLUMNS = ["coverage", "covered", "group", "score", "ci_low", "ci_high", "rank", "shared"]


def shared_columns(values: pd.DataFrame) -> list:
    """The columns most models share: columns taken by how many models fill them, keeping the prefix
    that maximises (columns x models covering all of them), with at least two such models; all columns
    when no two models share one."""
    counts = values.notna().sum().sort_values(ascending=False, kind="stable")
    best, best_score = [], 0
    chosen = []
    for col in counts.index:
        chosen.append(col)
        m = int(values[chosen].notna().all(axis=1).sum())
        if m >= 2 and len(chosen) * m > best_score:
            best, best_score = list(chosen), len(chosen) * m
    return best or list(values.columns)


def _win_rates(x: np.ndarray) -> np.ndarray:
    """x: (..., models) oriented so that higher is better -> the share of the others each model beats."""
    m = x.shape[-1]
    beats = (x[..., :, None] > x[..., None, :]).sum(axis=-1)
    ties = (x[..., :, None] == x[..., None, :]).sum(axis=-1) - 1
    return (beats + 0.5 * ties) / (m - 1)


def _se(v, lo, hi, stderr) -> float:
    if stderr is not None and np.isfinite(stderr) and stderr > 0:
        return float(stderr)
    if np.isfinite(lo) and np.isfinite(hi) and hi > lo:
        return float(hi - lo) / 3.92
    return 0.0


def overall_ranking(values: pd.DataFrame, ci_low: pd.DataFrame, ci_high: pd.DataFrame, higher_is_better: dict,
                    cols: Sequence, weights: Optional[dict] = None, stderr: Optional[pd.DataFrame] = None,
                    rounds: int = 1000, seed: int = 0) -> pd.DataFrame:
    """One row per model (the index of ``values``): coverage (how many of ``cols`` it fills), covered
    (which), group (0 = the widest coverage), score, its CI, the tie-aware rank within the group."""

    cols = [c for c in cols if c in values.columns]
    out = pd.DataFrame(index=values.index, columns=OVERALL_COLUMNS, dtype=object)
    covered = {e: tuple(c for c in cols if pd.notna(values.at[e, c])) for e in values.index}
    out["covered"] = pd.Series(covered)
    out["coverage"] = [len(covered[e]) for e in values.index]
    groups: dict = {}
    for e, cov in covered.items():
        groups.setdefault(cov, []).append(e)
    order = sorted(groups, key=lambda cov: (-len(cov), -len(groups[cov]), cols.index(cov[0]) if cov else 0))
    rng = np.random.default_rng(seed)
    for gi, cov in enumerate(order):
        members = groups[cov]
        out.loc[members, "group"] = gi
        if not cov or len(members) < 2:
            continue
        w = np.array([float((weights or {}).get(c, 1.0) or 1.0) for c in cov])
        w = w / w.sum()
        sign = np.array([1.0 if higher_is_better.get(c, True) else -1.0 for c in cov])
        v = values.loc[members, list(cov)].to_numpy(float)                 # models x cols
        se = np.array([[_se(values.at[e, c], float(ci_low.at[e, c]) if pd.notna(ci_low.at[e, c]) else np.nan,
                            float(ci_high.at[e, c]) if pd.notna(ci_high.at[e, c]) else np.nan,
                            None if stderr is None or pd.isna(stderr.at[e, c]) else float(stderr.at[e, c]))
                        for c in cov] for e in members])
        point = (_win_rates((v * sign).T) * w[:, None]).sum(axis=0)       # per model
        draws = v[None] + rng.standard_normal((rounds, *v.shape)) * se[None]
        boot = (_win_rates(np.transpose(draws * sign, (0, 2, 1))) * w[None, :, None]).sum(axis=1)
        lo, hi = np.percentile(boot, [2.5, 97.5], axis=0)
        out.loc[members, "score"] = point
        out.loc[members, "ci_low"] = np.minimum(lo, point)
        out.loc[members, "ci_high"] = np.maximum(hi, point)
        r = tied_ranks(point, out.loc[members, "ci_low"].to_numpy(float), out.loc[members, "ci_high"].to_numpy(float))
        counts = r.value_counts()
        out.loc[members, "rank"] = r.to_numpy()
        out.loc[members, "shared"] = [counts.get(x, 0) > 1 for x in r]
    for c in ("score", "ci_low", "ci_high", "rank"):
        out[c] = pd.to_numeric(out[c], errors="coerce")
    out["shared"] = out["shared"].fillna(False).astype(bool)
    out["group"] = out["group"].astype(int)
    out["coverage"] = out["coverage"].astype(int)
    return out


def ordered(overall: pd.DataFrame) -> list:
    """Models in overall order: group by group (widest coverage first), by rank, ties by score."""
    key = overall.assign(_s=-overall["score"].fillna(-np.inf))
    return list(key.sort_values(["group", "rank", "_s"], na_position="last", kind="stable").index)
