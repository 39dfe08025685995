"""Elo and Bradley–Terry ratings from pairwise battles, as Chatbot Arena does it.

Everything here reproduces the published FastChat / LMArena analysis code
(``fastchat/serve/monitor/elo_analysis.py`` and the LMArena Elo notebook) in
plain numpy/scipy, so our numbers can be compared with theirs:

* ``compute_online_elo``: the classic sequential Elo update (FastChat's
  ``compute_elo`` / the notebook's ``compute_online_elo``).  Order dependent.
* ``compute_bt``: the Bradley–Terry maximum-likelihood fit (FastChat's
  ``compute_mle_elo`` / ``compute_elo_mle_with_tie``) on the Elo scale.
* ``bootstrap_samples`` / ``bootstrap_ratings`` / ``rating_table``: bootstrap
  confidence intervals and LMArena's CI-overlap ranks.
* ``win_rate_matrix`` / ``battle_count_matrix`` / ``predicted_win_rate_matrix``.
* ``compute_bt_style``: BT with LMArena's "style control" covariates.

Conventions: ``base``/``scale`` define the Elo scale, ``P(a beats b) =
1 / (1 + base ** ((R_b - R_a) / scale))`` (10 and 400 as in chess).  Any tie,
including ``"tie (bothbad)"``, scores 0.5 for each side.  Battles may be given
as ``Battle`` objects, mappings with ``model_a``/``model_b``/``winner`` keys,
or a pandas DataFrame with those columns.  Randomness only ever comes from an
explicitly seeded ``numpy.random.Generator``.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.special import expit

from .battles import WINNERS, Battle

__all__ = [
    "STYLE_CONTROL_ELEMENTS_V1",
    "battle_count_matrix",
    "bootstrap_ratings",
    "bootstrap_samples",
    "compute_bt",
    "compute_bt_style",
    "compute_online_elo",
    "predicted_win_rate_matrix",
    "rating_table",
    "shared_ranks",
    "summarize_bootstrap",
    "win_rate_matrix",
]

BattlesLike = Iterable[Battle | Mapping[str, Any]] | pd.DataFrame
RatingFn = Callable[[list[Battle]], Mapping[str, float]]

_WINNER_SET = frozenset(WINNERS)


# --------------------------------------------------------------------------
# input normalisation
# --------------------------------------------------------------------------

def _columns(battles: BattlesLike) -> tuple[list[str], list[str], list[str]]:
    """Return the ``model_a``, ``model_b`` and ``winner`` columns as lists,
    validating winners (and self-battles) for inputs that bypassed ``Battle``."""
    if isinstance(battles, pd.DataFrame):
        missing = [c for c in ("model_a", "model_b", "winner") if c not in battles.columns]
        if missing:
            raise ValueError(f"battles DataFrame lacks column(s) {missing}")
        a = battles["model_a"].tolist()
        b = battles["model_b"].tolist()
        w = battles["winner"].tolist()
    else:
        a, b, w = [], [], []
        for i, x in enumerate(battles):
            if isinstance(x, Battle):
                a.append(x.model_a), b.append(x.model_b), w.append(x.winner)
            elif isinstance(x, Mapping):
                try:
                    a.append(x["model_a"]), b.append(x["model_b"]), w.append(x["winner"])
                except KeyError as err:
                    raise ValueError(f"battle #{i}: missing field {err.args[0]!r}") from None
            else:
                raise TypeError(f"battle #{i}: expected Battle or mapping, got {type(x).__name__}")
    for i, (ma, mb, win) in enumerate(zip(a, b, w)):
        if win not in _WINNER_SET:
            raise ValueError(
                f"battle #{i}: field 'winner': invalid value {win!r}; expected one of {list(WINNERS)}"
            )
        if ma == mb:
            raise ValueError(f"battle #{i}: model {ma!r} battles itself")
    return a, b, w


def _battle_list(battles: BattlesLike) -> list[Battle]:
    """Materialise any accepted battle input as a list of ``Battle``."""
    if isinstance(battles, pd.DataFrame):
        return [Battle.from_dict(r) for r in battles.to_dict(orient="records")]
    return [x if isinstance(x, Battle) else Battle.from_dict(x) for x in battles]


def _sorted_desc(ratings: Mapping[str, float]) -> dict[str, float]:
    """Ratings as a dict ordered highest first (ties broken by name)."""
    return dict(sorted(((m, float(r)) for m, r in ratings.items()), key=lambda kv: (-kv[1], kv[0])))


# --------------------------------------------------------------------------
# online Elo
# --------------------------------------------------------------------------

def compute_online_elo(
    battles: BattlesLike,
    K: float = 4,
    scale: float = 400,
    base: float = 10,
    init_rating: float = 1000,
) -> dict[str, float]:
    """Sequential Elo ratings, exactly FastChat's ``compute_elo``.

    Every model starts at ``init_rating``; battles are replayed **in the given
    order** and each moves both ratings by ``K * (score - expected)``, where a
    tie (either kind) scores 0.5.  The result therefore depends on the order
    of the battles (recent battles weigh more, and a reversed list gives other
    numbers); that is why LMArena switched to the order-free Bradley–Terry fit
    (``compute_bt``) and why bootstrapping online Elo (which also shuffles) is
    the only way to give it an uncertainty.  Returns ``{model: rating}``,
    highest first.
    """
    a, b, w = _columns(battles)
    rating: dict[str, float] = {}
    for model_a, model_b, winner in zip(a, b, w):
        ra = rating.get(model_a, init_rating)
        rb = rating.get(model_b, init_rating)
        ea = 1 / (1 + base ** ((rb - ra) / scale))
        eb = 1 / (1 + base ** ((ra - rb) / scale))
        sa = 1 if winner == "model_a" else 0 if winner == "model_b" else 0.5
        rating[model_a] = ra + K * (sa - ea)
        rating[model_b] = rb + K * (1 - sa - eb)
    return _sorted_desc(rating)


# --------------------------------------------------------------------------
# Bradley–Terry
# --------------------------------------------------------------------------

def _aggregate(
    a: Sequence[str], b: Sequence[str], w: Sequence[str], weights: Sequence[float] | None = None
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Collapse battles to unique ``(model_a, model_b, outcome)`` rows.

    Returns ``(models, pairs, outcomes, counts)``: models in order of first
    appearance, ``pairs[k] = (i_a, i_b)``, ``outcomes[k]`` = model A's score
    (1, 0.5 or 0) and ``counts[k]`` = how many (or what total weight of)
    battles had that result.  This is FastChat's ``preprocess_battles_to_arrays``
    and makes the likelihood cost independent of the number of battles.
    """
    if len(a) == 0:
        raise ValueError("no battles to rate")
    models = list(dict.fromkeys(m for pair in zip(a, b) for m in pair))
    index = {m: i for i, m in enumerate(models)}
    n = len(a)
    sched = np.empty((n, 3), dtype=np.int64)
    sched[:, 0] = np.fromiter((index[m] for m in a), dtype=np.int64, count=n)
    sched[:, 1] = np.fromiter((index[m] for m in b), dtype=np.int64, count=n)
    sched[:, 2] = np.fromiter(
        (2 if x == "model_a" else 0 if x == "model_b" else 1 for x in w), dtype=np.int64, count=n
    )
    uniq, inverse = np.unique(sched, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    if weights is None:
        counts = np.bincount(inverse, minlength=len(uniq)).astype(np.float64)
    else:
        wt = np.asarray(weights, dtype=np.float64)
        if wt.shape != (n,) or not np.all(np.isfinite(wt)) or np.any(wt < 0):
            raise ValueError("weights must be one finite, non-negative number per battle")
        counts = np.bincount(inverse, weights=wt, minlength=len(uniq))
    return models, uniq[:, :2], uniq[:, 2].astype(np.float64) / 2.0, counts


def _check_mle_exists(models: list[str], pairs: np.ndarray, outcomes: np.ndarray,
                      counts: np.ndarray) -> bool:
    """Warn (and return False) when the BT maximum-likelihood estimate does not exist.

    The MLE is finite (and unique up to a common shift) iff the directed graph
    "i scored against j" is strongly connected (Ford 1957; Hunter 2004).
    Otherwise some ratings run off to infinity and what comes back only
    reflects where the optimiser stopped.
    """
    if len(models) < 2:
        return True
    live = counts > 0
    fwd = live & (outcomes > 0)    # A took at least half a point off B
    bwd = live & (outcomes < 1)
    src = np.concatenate([pairs[fwd, 0], pairs[bwd, 1]])
    dst = np.concatenate([pairs[fwd, 1], pairs[bwd, 0]])
    graph = coo_matrix((np.ones(len(src)), (src, dst)), shape=(len(models), len(models)))
    n_comp, _ = connected_components(graph, directed=True, connection="strong")
    if n_comp > 1:
        warnings.warn(
            f"Bradley-Terry MLE does not exist: the win graph has {n_comp} strongly "
            "connected components (some model(s) never lost, or never won, against "
            "the rest); their ratings diverge and the returned values are not meaningful",
            RuntimeWarning,
            stacklevel=3,
        )
        return False
    return True


def _bt_loss_and_grad(theta, pairs, outcomes, counts, alpha, total, n_extra=0, design=None, l2=0.0):
    """Mean logistic log-loss of BT (+ optional covariates and L2) and its gradient.

    ``z = alpha * (theta[a] - theta[b]) [+ design @ beta]``; the loss of one
    battle is the cross-entropy ``-(o log s(z) + (1 - o) log s(-z))`` with
    soft label ``o`` = model A's score, so a tie counts as half a win and half
    a loss, exactly FastChat's "duplicate every battle, one tie = one A win +
    one B win" construction (which doubles the likelihood, same argmax).
    Divided by the total weight so optimiser tolerances do not scale with the
    number of battles.
    """
    n_models = theta.shape[0] - n_extra
    z = alpha * (theta[pairs[:, 0]] - theta[pairs[:, 1]])
    if n_extra:
        z = z + design @ theta[n_models:]
    loss = np.dot(counts, outcomes * np.logaddexp(0.0, -z) + (1.0 - outcomes) * np.logaddexp(0.0, z))
    g = counts * (expit(z) - outcomes)
    grad = np.empty_like(theta)
    grad[:n_models] = alpha * (
        np.bincount(pairs[:, 0], g, minlength=n_models) - np.bincount(pairs[:, 1], g, minlength=n_models)
    )
    if n_extra:
        grad[n_models:] = design.T @ g
    loss, grad = loss / total, grad / total
    if l2:
        loss = loss + 0.5 * l2 / total * np.dot(theta, theta)
        grad = grad + l2 / total * theta
    return loss, grad


def _hessian(theta, pairs, counts, alpha, total, n_extra=0, design=None, l2=0.0):
    """Hessian of ``_bt_loss_and_grad`` (a weighted graph Laplacian for the
    model block, plus the covariate blocks and the L2 diagonal)."""
    n_models = theta.shape[0] - n_extra
    z = alpha * (theta[pairs[:, 0]] - theta[pairs[:, 1]])
    if n_extra:
        z = z + design @ theta[n_models:]
    s = expit(z)
    h = counts * s * (1.0 - s) / total
    H = np.zeros((theta.shape[0], theta.shape[0]))
    i, j = pairs[:, 0], pairs[:, 1]
    hm = alpha * alpha * h
    np.add.at(H, (i, i), hm)
    np.add.at(H, (j, j), hm)
    np.add.at(H, (i, j), -hm)
    np.add.at(H, (j, i), -hm)
    if n_extra:
        cross = alpha * h[:, None] * design            # d2/dtheta_a dbeta
        block = np.zeros((n_models, n_extra))
        np.add.at(block, i, cross)
        np.add.at(block, j, -cross)
        H[:n_models, n_models:] = block
        H[n_models:, :n_models] = block.T
        H[n_models:, n_models:] = design.T @ (h[:, None] * design)
    if l2:
        H[np.diag_indices_from(H)] += l2 / total
    return H


def _fit(pairs, outcomes, counts, n_models, alpha, tol, max_iter, n_extra=0, design=None,
         l2=0.0, polish=True):
    """Minimise the BT loss: L-BFGS from zero, then a few Newton steps.

    L-BFGS (as FastChat's scipy fit) gets the gradient to ~1e-10, where the
    float objective stops resolving progress; that is ~1e-7 Elo points.  The
    Newton polish (``polish=True``; skipped when the MLE does not exist) takes
    it to machine precision (|grad| ~1e-17, ~1e-10 Elo points), so results are the same
    whatever the battle order and agree with other exact solvers.  Without a
    penalty the likelihood only sees rating differences: the model part is
    kept at mean zero (the gauge both FastChat fits end up in), fixed by the
    ``1 1^T / n`` term in the Newton system and a final re-centring.
    """
    total = float(counts.sum())
    if total <= 0:
        raise ValueError("total battle weight is zero")
    args = (pairs, outcomes, counts, alpha, total, n_extra, design, l2)
    res = minimize(
        _bt_loss_and_grad,
        np.zeros(n_models + n_extra),
        args=args,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": tol, "ftol": 0.0, "maxcor": 20},
    )
    x = res.x.copy()
    if l2 == 0.0:
        x[:n_models] -= x[:n_models].mean()
    gmax = float(np.max(np.abs(_bt_loss_and_grad(x, *args)[1])))
    if polish and np.isfinite(gmax):
        gauge = np.zeros((x.size, x.size))
        if l2 == 0.0:
            gauge[:n_models, :n_models] = 1.0 / n_models
        for _ in range(5):
            if gmax < 1e-15:
                break
            H = _hessian(x, pairs, counts, alpha, total, n_extra, design, l2)
            g = _bt_loss_and_grad(x, *args)[1]
            try:
                step = np.linalg.solve(H + gauge, -g)
            except np.linalg.LinAlgError:
                break
            trial = x + step
            if l2 == 0.0:
                trial[:n_models] -= trial[:n_models].mean()
            gtrial = float(np.max(np.abs(_bt_loss_and_grad(trial, *args)[1])))
            if not gtrial < gmax:
                break
            x, gmax = trial, gtrial
    if gmax > max(100 * tol, 1e-6):
        warnings.warn(
            f"Bradley-Terry fit did not converge (max |gradient| {gmax:.3g}, {res.message})",
            RuntimeWarning,
            stacklevel=3,
        )
    return x


def _to_elo(models, theta, scale, init_rating, anchor, anchor_rating) -> dict[str, float]:
    """``scale * theta + init_rating``, then shift so ``anchor`` sits at ``anchor_rating``."""
    ratings = scale * theta + init_rating
    if anchor is not None:
        if anchor not in models:
            raise ValueError(f"anchor model {anchor!r} does not appear in the battles")
        ratings = ratings + (anchor_rating - ratings[models.index(anchor)])
    return _sorted_desc(dict(zip(models, ratings)))


def compute_bt(
    battles: BattlesLike,
    scale: float = 400,
    base: float = 10,
    init_rating: float = 1000,
    anchor: str | None = None,
    anchor_rating: float = 1000.0,
    *,
    weights: Sequence[float] | None = None,
    tol: float = 1e-10,
    max_iter: int = 10_000,
) -> dict[str, float]:
    """Bradley–Terry ratings by maximum likelihood, on the Elo scale.

    Model: ``P(a beats b) = 1 / (1 + base ** ((R_b - R_a) / scale))``, fitted
    as a logistic regression of "A won" on a design row with ``+log(base)`` in
    model A's column and ``-log(base)`` in B's, no intercept, no penalty:
    FastChat's ``compute_mle_elo`` (sklearn ``LogisticRegression(
    fit_intercept=False, penalty=None)`` on the duplicated battles, where a
    tie or ``"tie (bothbad)"`` becomes one A win plus one B win and a decisive
    battle two wins), which is the same argmax as its later scipy version
    ``compute_elo_mle_with_tie`` (soft label 0.5 for ties).  Here the
    likelihood is maximised with scipy L-BFGS to a tight gradient tolerance
    and polished with Newton steps to machine precision.

    The likelihood is blind to a common shift, so the coefficients are
    centred (mean 0, as both FastChat fits end up) and mapped to
    ``scale * coef + init_rating``: without an anchor the ratings average
    ``init_rating``.  With ``anchor`` (LMArena anchors
    ``"mixtral-8x7b-instruct-v0.1"`` at 1114) everything is shifted so that
    model gets ``anchor_rating``; unlike FastChat, an anchor that is absent
    from the battles is an error rather than silently ignored.

    ``weights`` (one per battle) fits a weighted likelihood.  Warns
    (``RuntimeWarning``) when the MLE does not exist (a model that never lost
    or never won within its part of the comparison graph) or the optimiser
    did not converge.  Deterministic and independent of battle order.
    Returns ``{model: rating}``, highest first.
    """
    a, b, w = _columns(battles)
    models, pairs, outcomes, counts = _aggregate(a, b, w, weights)
    exists = _check_mle_exists(models, pairs, outcomes, counts)
    theta = _fit(pairs, outcomes, counts, len(models), math.log(base), tol, max_iter, polish=exists)
    return _to_elo(models, theta, scale, init_rating, anchor, anchor_rating)


# --------------------------------------------------------------------------
# style control (LMArena)
# --------------------------------------------------------------------------

#: LMArena's style covariates: per side, the answer length in tokens and the
#: counts of markdown headers, list items and bold spans, all read from each
#: battle's ``conv_metadata`` (a dict value is summed, e.g. header counts per
#: level ``{"h1": 2, "h2": 0, ...}``).
STYLE_CONTROL_ELEMENTS_V1: tuple[str, ...] = (
    "sum_assistant_a_tokens",
    "header_count_a",
    "list_count_a",
    "bold_count_a",
    "sum_assistant_b_tokens",
    "header_count_b",
    "list_count_b",
    "bold_count_b",
)


def _style_value(meta: Mapping[str, Any], key: str, i: int) -> float:
    if key not in meta:
        raise ValueError(f"battle #{i}: conv_metadata lacks {key!r}")
    v = meta[key]
    if isinstance(v, Mapping):
        v = sum(v.values())
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"battle #{i}: conv_metadata[{key!r}] is not a number: {v!r}")
    return float(v)


def compute_bt_style(
    battles: Iterable[Battle] | pd.DataFrame,
    scale: float = 400,
    base: float = 10,
    init_rating: float = 1000,
    anchor: str | None = None,
    anchor_rating: float = 1000.0,
    *,
    style_elements: Sequence[str] = STYLE_CONTROL_ELEMENTS_V1,
    l2: float = 0.0,
    tol: float = 1e-10,
    max_iter: int = 10_000,
) -> tuple[dict[str, float], dict[str, float]]:
    """Bradley–Terry with LMArena's style control; returns ``(ratings, style_coefs)``.

    As FastChat's ``construct_style_matrices`` + ``fit_mle_elo``: for each of
    the ``k`` features (first half of ``style_elements`` = side A, second half
    = side B) the covariate is ``(x_a - x_b) / (x_a + x_b + 1)``, standardised
    over the battles, and enters the logit with its own coefficient next to
    the model ratings.  The ratings then estimate strength with answer length
    and markdown use held equal; ``style_coefs`` (keyed by the side-A feature
    name, natural-log units) say how much each style feature sways the judge.

    Features come from ``battle.extra["conv_metadata"]`` (a ``conv_metadata``
    column for DataFrames).  ``l2`` adds ``l2/2 * ||params||^2`` to the summed
    log-loss; FastChat fits with sklearn's default ``C=1`` on duplicated
    battles, which is ``l2=0.5`` here (then centring is left to the penalty).
    With ``l2=0`` this is the plain MLE, centred and anchored as
    ``compute_bt``.
    """
    items = _battle_list(battles)
    if len(style_elements) % 2:
        raise ValueError("style_elements must list side-A features then side-B features")
    k = len(style_elements) // 2
    a = [x.model_a for x in items]
    b = [x.model_b for x in items]
    w = [x.winner for x in items]
    raw = np.empty((len(items), 2 * k))
    for i, x in enumerate(items):
        meta = x.extra.get("conv_metadata")
        if not isinstance(meta, Mapping):
            raise TypeError(f"battle #{i}: extra['conv_metadata'] missing or not an object")
        raw[i] = [_style_value(meta, key, i) for key in style_elements]
    diff = (raw[:, :k] - raw[:, k:]) / (raw[:, :k] + raw[:, k:] + 1.0)
    std = diff.std(axis=0)
    std[std == 0] = 1.0  # a constant feature carries no information; avoid 0/0
    design = (diff - diff.mean(axis=0)) / std

    models = list(dict.fromkeys(m for pair in zip(a, b) for m in pair))
    index = {m: i for i, m in enumerate(models)}
    pairs = np.array([[index[ma], index[mb]] for ma, mb in zip(a, b)], dtype=np.int64).reshape(-1, 2)
    outcomes = np.array([1.0 if x == "model_a" else 0.0 if x == "model_b" else 0.5 for x in w])
    counts = np.ones(len(items))
    exists = _check_mle_exists(models, pairs, outcomes, counts) if l2 == 0.0 else True
    theta = _fit(pairs, outcomes, counts, len(models), math.log(base), tol, max_iter,
                 n_extra=k, design=design, l2=l2, polish=exists)
    ratings = _to_elo(models, theta[: len(models)], scale, init_rating, anchor, anchor_rating)
    coefs = {name: float(c) for name, c in zip(style_elements[:k], theta[len(models):])}
    return ratings, coefs


# --------------------------------------------------------------------------
# bootstrap and ranks
# --------------------------------------------------------------------------

def _single_threaded_blas() -> contextlib.AbstractContextManager[Any]:
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
    with _single_threaded_blas():
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


def _battle_counts(a: Sequence[str], b: Sequence[str]) -> pd.Series:
    return pd.Series(list(a) + list(b), dtype=object).value_counts()


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
    counts = _battle_counts([x.model_a for x in items], [x.model_b for x in items])
    table["n_battles"] = counts.reindex(table.index).fillna(0).astype(np.int64)
    table["rank"] = shared_ranks(table["ci_low"], table["ci_high"])
    table.index.name = "model"
    return table.sort_values("rating", ascending=False)


# --------------------------------------------------------------------------
# matrices
# --------------------------------------------------------------------------

def _square(models: Sequence[str], values: np.ndarray) -> pd.DataFrame:
    df = pd.DataFrame(values, index=pd.Index(models, name="model"), columns=pd.Index(models, name="opponent"))
    return df


def _pair_tallies(battles: BattlesLike, models: Sequence[str] | None):
    a, b, w = _columns(battles)
    names = list(models) if models is not None else sorted(set(a) | set(b))
    idx = {m: i for i, m in enumerate(names)}
    n = len(names)
    wins = np.zeros((n, n))
    ties = np.zeros((n, n))
    for ma, mb, win in zip(a, b, w):
        if ma not in idx or mb not in idx:
            continue
        i, j = idx[ma], idx[mb]
        if win == "model_a":
            wins[i, j] += 1
        elif win == "model_b":
            wins[j, i] += 1
        else:
            ties[i, j] += 1
            ties[j, i] += 1
    return names, wins, ties


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
