"""Bootstrap by resampling battles (any rating function), summaries, LMArena's ranks.

``bootstrap_samples`` is FastChat's ``get_bootstrap_result``: each round draws
the battles again with replacement and calls the rating function on them.  It
works for any function, including the order-dependent online Elo, and is the
reference the count-based bootstrap (``evalkit.arena.resample``) is tested
against.  ``rating_table`` builds the leaderboard from either.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from .battles import Battle
from .bt import compute_bt
from .table import BattlesLike, as_table

__all__ = ["bootstrap_ratings", "bootstrap_samples", "rating_table", "shared_ranks", "summarize_bootstrap",
           "single_threaded_blas"]

RatingFn = Callable[[list[Battle]], Mapping[str, float]]


def _battle_list(battles: BattlesLike) -> list[Battle]:
    """Materialise any accepted battle input as a list of ``Battle``."""
    if isinstance(battles, pd.DataFrame):
        return [Battle.from_dict(r) for r in battles.to_dict(orient="records")]
    return [x if isinstance(x, Battle) else Battle.from_dict(x) for x in battles]


def single_threaded_blas() -> contextlib.AbstractContextManager[Any]:
    """Limit BLAS to one thread while bootstrapping, if threadpoolctl is there.

    Each fit is a handful of tiny vector operations; OpenBLAS waking its
    thread pool for every one of them made a bootstrap ~25x slower on a busy
    2-core machine (70 ms instead of 3 ms per fit).  Optional: without
    threadpoolctl (a scikit-learn dependency) this is a no-op.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def bootstrap_samples(
    battles: BattlesLike,
    fn: RatingFn = compute_bt,
    rounds: int = 100,
    seed: int | np.random.Generator = 0,
) -> pd.DataFrame:
    """Ratings on ``rounds`` bootstrap resamples: a DataFrame rounds x models.

    Each round draws ``len(battles)`` battles with replacement (in random
    order, like FastChat's ``battles.sample(frac=1.0, replace=True)``) using
    ``numpy.random.default_rng(seed)`` and calls ``fn(list_of_battles)``
    (any function returning ``{model: rating}``, e.g. a ``functools.partial``
    of ``compute_bt`` with an anchor).  A model missing from a resample is NaN
    in that round.  Same seed, same numbers.  Columns are sorted by median.
    """
    if rounds < 1:
        raise ValueError("rounds must be >= 1")
    items = _battle_list(battles)
    if not items:
        raise ValueError("no battles to bootstrap")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    n = len(items)
    rows = []
    with single_threaded_blas():
        for _ in range(rounds):
            idx = rng.integers(0, n, size=n)
            rows.append(dict(fn([items[i] for i in idx])))
    df = pd.DataFrame(rows, dtype=np.float64)
    return df[df.median().sort_values(ascending=False).index]


def summarize_bootstrap(samples: pd.DataFrame, ci: float = 0.95) -> pd.DataFrame:
    """Per model: ``median``, ``mean``, ``std``, ``ci_low``/``ci_high`` (the
    ``(1-ci)/2`` and ``(1+ci)/2`` quantiles, linear interpolation as pandas and
    FastChat) and ``rounds`` (resamples the model appeared in); by median."""
    lo, hi = (1 - ci) / 2, (1 + ci) / 2
    out = pd.DataFrame(
        {
            "median": samples.median(),
            "mean": samples.mean(),
            "std": samples.std(),
            "ci_low": samples.quantile(lo),
            "ci_high": samples.quantile(hi),
            "rounds": samples.notna().sum(),
        }
    )
    out.index.name = "model"
    return out.sort_values("median", ascending=False)


def bootstrap_ratings(
    battles: BattlesLike,
    fn: RatingFn = compute_bt,
    rounds: int = 100,
    seed: int | np.random.Generator = 0,
    ci: float = 0.95,
) -> pd.DataFrame:
    """``summarize_bootstrap(bootstrap_samples(...))``: per-model median, mean,
    std and the 2.5 / 97.5 percentiles (for ``ci=0.95``) over the resamples."""
    return summarize_bootstrap(bootstrap_samples(battles, fn, rounds, seed), ci)


def shared_ranks(ci_low: Mapping[str, float] | pd.Series, ci_high: Mapping[str, float] | pd.Series) -> pd.Series:
    """LMArena's rank: ``1 +`` the number of *other* models whose lower bound
    is strictly above this model's upper bound.

    Models whose intervals overlap can therefore share a place, and ranks may
    skip (1, 1, 3).  A NaN bound never counts as "strictly above".
    """
    lo = pd.Series(ci_low, dtype=np.float64)
    hi = pd.Series(ci_high, dtype=np.float64).reindex(lo.index)
    lov, hiv = lo.to_numpy(), hi.to_numpy()
    better = lov[None, :] > hiv[:, None]       # better[i, j]: j is clearly above i
    np.fill_diagonal(better, False)
    return pd.Series(1 + better.sum(axis=1), index=lo.index, name="rank")

def rating_table(
    battles: BattlesLike,
    fn: RatingFn = compute_bt,
    rounds: int = 100,
    seed: int | np.random.Generator = 0,
    ci: float = 0.95,
    point: str = "fit",
) -> pd.DataFrame:
    """The leaderboard: per model ``rating``, ``ci_low``, ``ci_high``,
    ``n_battles`` and ``rank`` (``shared_ranks``), sorted by rating.

    ``rating`` is ``fn`` on all battles (``point="fit"``, LMArena's choice for
    BT) or the bootstrap median (``point="median"``, what FastChat reports for
    online Elo, whose single fit depends on battle order); the interval comes
    from ``bootstrap_ratings`` with the same ``fn``/``rounds``/``seed``.
    """
    if point not in ("fit", "median"):
        raise ValueError("point must be 'fit' or 'median'")
    items = _battle_list(battles)
    summary = bootstrap_ratings(items, fn, rounds, seed, ci)
    if point == "fit":
        rating = pd.Series(dict(fn(items)), dtype=np.float64)
    else:
        rating = summary["median"]
    table = pd.DataFrame({"rating": rating})
    table["ci_low"] = summary["ci_low"].reindex(table.index)
    table["ci_high"] = summary["ci_high"].reindex(table.index)
    counts = as_table(items).tallies()["n_battles"]
    table["n_battles"] = counts.reindex(table.index).fillna(0).astype(np.int64)
    table["rank"] = shared_ranks(table["ci_low"], table["ci_high"])
    table.index.name = "model"
    return table.sort_values("rating", ascending=False)
