"""The Bradley–Terry leaderboard at scale, with undetermined ratings said so.

``bt_leaderboard`` is ``rating_table(battles, compute_bt)`` on the fast path:
the battles are aggregated once into cells, the point ratings are
``compute_bt``'s optimum (to ~1e-9 Elo points, by Newton steps on the pair
matrices), the intervals come from the count bootstrap
(``evalkit.arena.resample``), the ranks are LMArena's CI-overlap ranks.

A rating only exists where the data pins it down.  When the win graph is not
strongly connected (a model that never lost, or never won, against the rest:
one battle between two models is the smallest case) the likelihood keeps
improving as those ratings run off to infinity, and whatever number the
optimiser stopped at (often +-2,000 with a zero-width interval) is an
artefact.  Such models are reported as *undetermined*: ``determined`` is
False, their rating, interval and rank are NaN, and a warning names them.
The others (the largest strongly connected group) are rated among
themselves, on the battles between them.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from .bootstrap import shared_ranks, summarize_bootstrap
from .bt import to_elo
from .cells import aggregate, win_graph_components
from .resample import bootstrap_cells, fit_fast
from .table import BattlesLike, BattleTable, as_table

__all__ = ["bt_leaderboard", "determined_models"]

COLUMNS = ["rating", "ci_low", "ci_high", "n_battles", "rank", "determined"]


def determined_models(cells) -> np.ndarray:
    """Bool mask over ``cells.models``: the largest strongly connected group of the
    win graph (most models, then most battles; the first such group on a tie),
    or nothing when that group is a single model."""
    n_comp, labels = win_graph_components(cells)
    if n_comp == 1:
        return np.ones(len(cells.models), dtype=bool)
    size = np.bincount(labels, minlength=n_comp)
    games = np.bincount(labels[cells.pairs.ravel()], np.repeat(cells.counts, 2), minlength=n_comp)
    best = max(range(n_comp), key=lambda c: (size[c], games[c], -c))
    keep = labels == best
    return keep if size[best] >= 2 else np.zeros(len(cells.models), dtype=bool)


def warn_undetermined(models: list, keep: np.ndarray, anchor: str | None, stacklevel: int = 2) -> None:
    """Warn about the models whose rating has no finite maximum; refuse such a model as anchor."""
    if keep.all():
        return
    lost = [m for m, k in zip(models, keep) if not k]
    shown = ", ".join(lost[:8]) + (f" and {len(lost) - 8} more" if len(lost) > 8 else "")
    warnings.warn(
        f"rating undetermined for {len(lost)} model(s) ({shown}): within the battles they never lost, "
        "or never won, against the rest, so the Bradley-Terry likelihood has no finite maximum for them; "
        "they are shown without a rating and the others are rated on the battles among themselves",
        RuntimeWarning, stacklevel=stacklevel,
    )
    if anchor is not None and anchor in lost:
        raise ValueError(f"anchor model {anchor!r} has an undetermined rating; choose another anchor")


def bt_leaderboard(
    battles: BattlesLike | BattleTable,
    rounds: int = 100,
    seed: int | np.random.Generator = 0,
    ci: float = 0.95,
    *,
    anchor: str | None = None,
    anchor_rating: float = 1000.0,
    scale: float = 400,
    base: float = 10,
    init_rating: float = 1000,
    progress: bool = False,
) -> pd.DataFrame:
    """Per model ``rating``, ``ci_low``, ``ci_high``, ``n_battles``, ``rank`` and
    ``determined``; determined models first, by rating.  ``rounds=0`` skips the
    bootstrap (NaN intervals, every rank 1)."""
    if rounds < 0:
        raise ValueError("rounds must be >= 0")
    table = as_table(battles)
    cells = aggregate(table)
    keep = determined_models(cells)
    models = list(cells.models)
    warn_undetermined(models, keep, anchor, stacklevel=3)
    rated = cells.subset(keep)
    board = pd.DataFrame(index=pd.Index(models, name="model"), columns=COLUMNS[:5], dtype=np.float64)
    if rated.models:
        theta = fit_fast(rated, base)
        point = pd.Series(to_elo(rated.models, theta, scale, init_rating, anchor, anchor_rating))
        board.loc[point.index, "rating"] = point
        if rounds > 0:
            samples = bootstrap_cells(rated, rounds, seed, scale=scale, base=base, init_rating=init_rating,
                                      anchor=anchor, anchor_rating=anchor_rating, theta0=theta,
                                      progress=progress)
            summary = summarize_bootstrap(samples, ci)
            board.loc[summary.index, "ci_low"] = summary["ci_low"]
            board.loc[summary.index, "ci_high"] = summary["ci_high"]
        sub = board.loc[rated.models]
        board.loc[rated.models, "rank"] = shared_ranks(sub["ci_low"], sub["ci_high"])
    board["n_battles"] = table.tallies()["n_battles"].reindex(board.index).astype(np.float64)
    board["determined"] = keep
    board = board.sort_values(["determined", "rating"], ascending=[False, False], kind="stable")
    board["n_battles"] = board["n_battles"].astype(np.int64)
    return board
