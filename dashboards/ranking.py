"""The overall ranking, honestly (no Streamlit).

- It is computed over a chosen set of columns (default: ``shared_columns``, the columns most models
  share) and a model is ranked only against models that cover *the same* columns of that set
  (its coverage group); groups are listed by coverage, the full group first. A model alone in its
  group has no score (there is nobody to compare with on the same tasks).
- Score: mean win rate within the group (in each column, the share of the group's other models it
  beats, ties ½), averaged over the columns, equally or weighted by the columns' item counts.
- Its 95% CI is a parametric bootstrap: each cell redrawn from a normal with the cell's standard
  error (``stderr``, else CI width / 3.92), the win rates recomputed, percentiles 2.5 and 97.5.
- Cost: a column's win rates come from its sorted values (a model's win rate is its average rank,
  ties averaged, minus one, over the others), so each bootstrap round costs O(models log models) per
  column, not the O(models²) of comparing every pair; the rounds are drawn in chunks, so memory stays
  at ``CHUNK`` rounds x models x columns. The figures are exactly those of the pairwise count
  (``tests/dashboards/test_ranking_scale.py`` checks both on fixtures).
- Ranks: the same rule as every column (``tables.tied_ranks``): '=' means the CI overlaps the CI of
  the group's leader, nothing else, anywhere.
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Optional, Sequence

import numpy as np
import pandas as pd


def tied_ranks(values, ci_low, ci_high, higher_is_better: bool = True) -> pd.Series:
    """Ranks where statistically tied models share a place (the group-leader rule, module doc).
    NaN values get no rank (NaN)."""
    v = pd.Series(values, dtype=float)
    x = v.to_numpy()
    lo = pd.Series(ci_low, dtype=float, index=v.index).fillna(v).to_numpy()
    hi = pd.Series(ci_high, dtype=float, index=v.index).fillna(v).to_numpy()
    ranks = np.full(len(x), np.nan)
    known = np.flatnonzero(~np.isnan(x))
    order = known[np.argsort(-x[known] if higher_is_better else x[known], kind="stable")]
    leader = -1
    for pos, i in enumerate(order.tolist(), start=1):
        if leader >= 0 and lo[i] <= hi[leader] and lo[leader] <= hi[i]:
            ranks[i] = ranks[leader]
            continue
        leader = i
        ranks[i] = pos
    return pd.Series(ranks, index=v.index)


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


def average_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks along the last axis, tied values sharing the mean of their positions (one sort)."""
    order = np.argsort(x, axis=-1)      # any order among equal values: they share their mean position
    xs = np.take_along_axis(x, order, axis=-1)
    m = x.shape[-1]
    ranks = np.empty(x.shape, float)
    if not (xs[..., 1:] == xs[..., :-1]).any():       # no ties (redrawn cells): a rank is a position
        np.put_along_axis(ranks, order, np.broadcast_to(np.arange(1.0, m + 1), x.shape), axis=-1)
        return ranks
    pos = np.broadcast_to(np.arange(m), x.shape)
    starts = np.concatenate([np.ones(x.shape[:-1] + (1,), bool), xs[..., 1:] != xs[..., :-1]], axis=-1)
    ends = np.concatenate([xs[..., 1:] != xs[..., :-1], np.ones(x.shape[:-1] + (1,), bool)], axis=-1)
    first = np.maximum.accumulate(np.where(starts, pos, 0), axis=-1)
    last = np.flip(np.minimum.accumulate(np.flip(np.where(ends, pos, m - 1), axis=-1), axis=-1), axis=-1)
    np.put_along_axis(ranks, order, (first + last) / 2 + 1, axis=-1)
    return ranks


def _win_rates(x: np.ndarray) -> np.ndarray:
    """x: (..., models) oriented so that higher is better -> the share of the others each model beats
    (ties ½): the number below it plus half the others equal to it, i.e. its average rank - 1."""
    return (average_ranks(x) - 1) / (x.shape[-1] - 1)


CHUNK = 100   # bootstrap rounds drawn at once


def _standard_errors(v: np.ndarray, lo: np.ndarray, hi: np.ndarray, stderr: Optional[np.ndarray]) -> np.ndarray:
    """A cell's standard error: its ``stderr`` when positive, else its CI width / 3.92, else 0."""
    width = np.where(np.isfinite(lo) & np.isfinite(hi) & (hi > lo), (hi - lo) / 3.92, 0.0)
    if stderr is None:
        return width
    return np.where(np.isfinite(stderr) & (stderr > 0), stderr, width)


def _bootstrap(v: np.ndarray, se: np.ndarray, sign: np.ndarray, w: np.ndarray, rounds: int,
               rng: np.random.Generator) -> np.ndarray:
    """(rounds, models) overall scores, the cells redrawn CHUNK rounds at a time (the same normal
    stream as drawing all rounds at once)."""
    out = np.empty((rounds, v.shape[0]))
    for start in range(0, rounds, CHUNK):
        n = min(CHUNK, rounds - start)
        draws = (v[None] + rng.standard_normal((n, *v.shape)) * se[None]) * sign     # n x models x cols
        out[start:start + n] = (_win_rates(np.transpose(draws, (0, 2, 1))) * w[None, :, None]).sum(axis=1)
    return out


def overall_ranking(values: pd.DataFrame, ci_low: pd.DataFrame, ci_high: pd.DataFrame, higher_is_better: dict,
                    cols: Sequence, weights: Optional[dict] = None, stderr: Optional[pd.DataFrame] = None,
                    rounds: int = 1000, seed: int = 0) -> pd.DataFrame:
    """One row per model (the index of ``values``): coverage (how many of ``cols`` it fills), covered
    (which), group (0 = the widest coverage), score, its CI, the tie-aware rank within the group.
    Computed once per distinct input (``_MEMO``: a filter that leaves every model's cells as they were,
    such as showing every run rather than the newest, gets the ranking back at once)."""
    key = _memo_key(values, ci_low, ci_high, higher_is_better, cols, weights, stderr, rounds, seed)
    with _MEMO_LOCK:          # one ranking at a time: a session asking for the one being made waits for it
        if key in _MEMO:
            _MEMO.move_to_end(key)
            return _MEMO[key].copy()
        out = _overall_ranking(values, ci_low, ci_high, higher_is_better, cols, weights, stderr, rounds, seed)
        _MEMO[key] = out.copy()
        while len(_MEMO) > MEMO_SIZE:
            _MEMO.popitem(last=False)
        return out


MEMO_SIZE = 8
_MEMO: OrderedDict = OrderedDict()
_MEMO_LOCK = threading.Lock()


def _memo_key(values, ci_low, ci_high, hib, cols, weights, stderr, rounds, seed) -> str:
    """A digest of everything the ranking reads: the models, the chosen columns' cells and settings."""
    h = hashlib.sha256()
    cols = [c for c in cols if c in values.columns]
    h.update(repr((list(values.index), cols, sorted((hib or {}).items()), sorted((weights or {}).items()),
                   rounds, seed)).encode())
    for frame in (values, ci_low, ci_high, stderr):
        h.update(b"-" if frame is None else frame.reindex(index=values.index, columns=cols).to_numpy(float).tobytes())
    return h.hexdigest()


def _overall_ranking(values: pd.DataFrame, ci_low: pd.DataFrame, ci_high: pd.DataFrame, higher_is_better: dict,
                     cols: Sequence, weights: Optional[dict], stderr: Optional[pd.DataFrame], rounds: int,
                     seed: int) -> pd.DataFrame:

    cols = [c for c in cols if c in values.columns]
    out = pd.DataFrame(index=values.index, columns=OVERALL_COLUMNS, dtype=object)
    filled = values[cols].notna().to_numpy() if cols else np.zeros((len(values), 0), bool)
    covered = {e: tuple(c for c, f in zip(cols, row) if f) for e, row in zip(values.index, filled)}
    out["covered"] = pd.Series(covered)
    out["coverage"] = filled.sum(axis=1)
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
        pick = (members, list(cov))
        v = values.loc[pick].to_numpy(float)                                # models x cols
        se = _standard_errors(v, ci_low.loc[pick].to_numpy(float), ci_high.loc[pick].to_numpy(float),
                              None if stderr is None else stderr.loc[pick].to_numpy(float))
        point = (_win_rates((v * sign).T) * w[:, None]).sum(axis=0)       # per model
        lo, hi = np.percentile(_bootstrap(v, se, sign, w, rounds, rng), [2.5, 97.5], axis=0)
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
