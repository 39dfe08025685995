"""The style-controlled leaderboard: ``bt_leaderboard`` with LMArena's style covariates.

``style_leaderboard(table)`` takes a ``BattleTable`` read with
``read_battle_table(paths, style=STYLE_CONTROL_ELEMENTS_V1)`` and returns the
ratings table (same columns as ``bt_leaderboard``: models whose rating the
battles do not pin down are ``determined=False`` with NaN rating, interval and
rank; the others are fitted on the battles among themselves, the style design
standardised over all the battles first, as FastChat does) and a table of
the style coefficients with their intervals.  Point values are
``compute_bt_style``'s on the same battles; intervals come from the weighted
bootstrap of ``evalkit.arena.style_fit``.
"""

from __future__ import annotations


import numpy as np
import pandas as pd

from .bootstrap import shared_ranks, single_threaded_blas
from .bt import to_elo
from .cells import aggregate
from .leaderboard import COLUMNS, determined_models, warn_undetermined
from .style_fit import StyleProblem, bootstrap_style, fit_style, standardise
from .table import BattleTable

__all__ = ["style_leaderboard", "style_problem"]

_OUTCOME = np.array([1.0, 0.0, 0.5, 0.5])      # winner code -> model A's score


def style_problem(table: BattleTable, keep: np.ndarray | None = None) -> StyleProblem:
    """The battles among the models in ``keep`` (all by default) as a ``StyleProblem``, the
    style ratios standardised over all the table's battles first (as FastChat's
    ``construct_style_matrices`` and ``compute_bt_style``), then subset."""
    if table.style is None:
        raise ValueError("the battles were read without style features (read_battle_table(..., style=...))")
    models = list(table.models)
    live = slice(None)
    a, b = table.a, table.b
    if keep is not None and not keep.all():
        live = keep[a] & keep[b]
        new = np.cumsum(keep) - 1
        a, b = new[a[live]].astype(np.int32), new[b[live]].astype(np.int32)
        models = [m for m, k in zip(models, keep) if k]
    design = standardise(table.style)
    return StyleProblem(models, a, b, _OUTCOME[table.winner[live]], np.ascontiguousarray(design[:, live]))


def style_leaderboard(
    table: BattleTable,
    rounds: int = 100,
    seed: int | np.random.Generator = 0,
    ci: float = 0.95,
    *,
    anchor: str | None = None,
    anchor_rating: float = 1000.0,
    scale: float = 400,
    base: float = 10,
    init_rating: float = 1000,
    l2: float = 0.0,
    progress: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(ratings, coefs)``: ratings as ``bt_leaderboard``'s table, style-controlled;
    ``coefs`` indexed by the side-A feature name with ``coef`` (natural-log units: how
    much a one-standard-deviation style difference moves the log-odds), ``ci_low``,
    ``ci_high``.  ``rounds=0`` skips the bootstrap.  ``l2`` as ``compute_bt_style``
    (0.5 is FastChat's sklearn default on duplicated battles)."""
    if rounds < 0:
        raise ValueError("rounds must be >= 0")
    if not len(table):
        raise ValueError("no battles to rate")
    models = list(table.models)
    keep = determined_models(aggregate(table))
    warn_undetermined(models, keep, anchor, stacklevel=3)
    if anchor is not None and anchor not in models:
        raise ValueError(f"anchor model {anchor!r} does not appear in the battles")
    names = [e for e in table.style_elements[: len(table.style_elements) // 2]]
    board = pd.DataFrame(index=pd.Index(models, name="model"), columns=COLUMNS[:5], dtype=np.float64)
    coefs = pd.DataFrame(index=pd.Index(names, name="feature"), columns=["coef", "ci_low", "ci_high"],
                         dtype=np.float64)
    if keep.sum() >= 2:
        prob = style_problem(table, keep)
        m = len(prob.models)
        with single_threaded_blas():
            x = fit_style(prob, base=base, l2=l2)
            point = pd.Series(to_elo(prob.models, x[:m], scale, init_rating, anchor, anchor_rating))
            board.loc[point.index, "rating"] = point
            coefs["coef"] = x[m:]
            if rounds > 0:
                draws = bootstrap_style(prob, rounds, seed, base=base, l2=l2, x0=x, progress=progress)
                elo = scale * draws[:, :m] + init_rating
                if anchor is not None:
                    elo += anchor_rating - elo[:, [prob.models.index(anchor)]]
                lo, hi = (1 - ci) / 2, (1 + ci) / 2
                samples = pd.DataFrame(elo, columns=prob.models)
                board.loc[prob.models, "ci_low"] = samples.quantile(lo).to_numpy()
                board.loc[prob.models, "ci_high"] = samples.quantile(hi).to_numpy()
                beta = pd.DataFrame(draws[:, m:], columns=names)
                coefs["ci_low"], coefs["ci_high"] = beta.quantile(lo), beta.quantile(hi)
        sub = board.loc[prob.models]
        board.loc[prob.models, "rank"] = shared_ranks(sub["ci_low"], sub["ci_high"])
    board["n_battles"] = table.tallies()["n_battles"].reindex(board.index).astype(np.float64)
    board["determined"] = keep
    board = board.sort_values(["determined", "rating"], ascending=[False, False], kind="stable")
    board["n_battles"] = board["n_battles"].astype(np.int64)
    return board, coefs

