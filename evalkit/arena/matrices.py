"""Pairwise matrices: battles fought, observed win rates, win rates implied by ratings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .cells import aggregate
from .table import BattlesLike, BattleTable, as_table

__all__ = ["battle_count_matrix", "predicted_win_rate_matrix", "win_rate_matrix"]


def _square(models: Sequence[str], values: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame(values, index=pd.Index(models, name="model"), columns=pd.Index(models, name="opponent"))


def _pair_tallies(battles: BattlesLike | BattleTable, models: Sequence[str] | None):
    """``(names, wins, ties)``: ``wins[i, j]`` battles row model i won against j,
    ``ties[i, j]`` (symmetric) their ties; battles of models outside ``names`` are dropped.
    Counted from the aggregated cells, so the cost does not grow with the battles."""
    table = as_table(battles)
    names = list(models) if models is not None else sorted(table.models)
    n = len(names)
    wins, ties = np.zeros((n, n)), np.zeros((n, n))
    if not len(table):
        return names, wins, ties
    cells = aggregate(table)
    pos = {m: i for i, m in enumerate(names)}
    where = np.array([pos.get(m, -1) for m in cells.models], dtype=np.int64)
    i, j = where[cells.pairs[:, 0]], where[cells.pairs[:, 1]]
    keep = (i >= 0) & (j >= 0)
    i, j, o, c = i[keep], j[keep], cells.outcomes[keep], cells.counts[keep]
    np.add.at(wins, (i[o == 1], j[o == 1]), c[o == 1])
    np.add.at(wins, (j[o == 0], i[o == 0]), c[o == 0])
    np.add.at(ties, (i[o == 0.5], j[o == 0.5]), c[o == 0.5])
    return names, wins, ties + ties.T


def battle_count_matrix(
    battles: BattlesLike, models: Sequence[str] | None = None, include_ties: bool = True
) -> pd.DataFrame:
    """Symmetric matrix of how many battles each pair fought (either side).

    ``models`` fixes the row/column order (and drops other models; default:
    all, sorted by name).  ``include_ties=False`` counts decisive battles
    only, as FastChat's battle-count heatmap does.
    """
    names, wins, ties = _pair_tallies(battles, models)
    counts = wins + wins.T + (ties if include_ties else 0.0)
    return _square(names, counts.astype(np.int64))


def win_rate_matrix(
    battles: BattlesLike, models: Sequence[str] | None = None, ties: str = "exclude"
) -> pd.DataFrame:
    """Observed fraction of battles the row model won against the column model.

    ``ties``: ``"exclude"`` (default) uses decisive battles only, as FastChat's
    win-fraction heatmap (computed on the battles without ties); ``"half"``
    counts a tie as half a win for each side; ``"loss"`` keeps ties in the
    denominator only (FastChat's ``compute_pairwise_win_fraction`` applied to
    battles with ties).  NaN on the diagonal and for pairs that never met.
    """
    if ties not in ("exclude", "half", "loss"):
        raise ValueError("ties must be 'exclude', 'half' or 'loss'")
    names, wins, tie = _pair_tallies(battles, models)
    num = wins + (0.5 * tie if ties == "half" else 0.0)
    den = wins + wins.T + (tie if ties in ("half", "loss") else 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    np.fill_diagonal(rate, np.nan)
    return _square(names, rate)


def predicted_win_rate_matrix(
    ratings: Mapping[str, float], scale: float = 400, base: float = 10
) -> pd.DataFrame:
    """Win probability of the row model over the column model implied by
    ratings: ``1 / (1 + base ** ((R_col - R_row) / scale))`` (the notebook's
    ``predict_win_rate``).  Ordered by rating, NaN on the diagonal."""
    order = sorted(ratings, key=lambda m: (-float(ratings[m]), m))
    r = np.array([float(ratings[m]) for m in order])
    p = 1.0 / (1.0 + np.power(float(base), (r[None, :] - r[:, None]) / scale))
    np.fill_diagonal(p, np.nan)
    return _square(order, p)
