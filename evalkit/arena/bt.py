"""Bradley–Terry maximum likelihood on the Elo scale, as Chatbot Arena fits it.

``compute_bt`` is FastChat's ``compute_mle_elo`` / ``compute_elo_mle_with_tie``
in plain numpy/scipy: the battles are collapsed into cells
(``evalkit.arena.cells``), the logistic likelihood is maximised with L-BFGS and
polished with Newton steps to machine precision.  ``fit_cells`` and
``to_elo`` are the pieces the bootstrap and the style-controlled fit reuse.

Conventions: ``P(a beats b) = 1 / (1 + base ** ((R_b - R_a) / scale))`` (10 and
400 as in chess); any tie, including ``"tie (bothbad)"``, scores 0.5 each.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from .cells import Cells, aggregate, win_graph_components
from .table import BattlesLike, as_table

__all__ = ["compute_bt", "fit_cells", "mle_exists", "sorted_desc", "to_elo"]


def sorted_desc(ratings: Mapping[str, float]) -> dict[str, float]:
    """Ratings as a dict ordered highest first (ties broken by name)."""
    return dict(sorted(((m, float(r)) for m, r in ratings.items()), key=lambda kv: (-kv[1], kv[0])))


def mle_exists(cells: Cells, stacklevel: int = 3) -> bool:
    """Warn (and return False) when the BT maximum-likelihood estimate does not exist.

    The MLE is finite (and unique up to a common shift) iff the directed graph
    "i scored against j" is strongly connected (Ford 1957; Hunter 2004).
    Otherwise some ratings run off to infinity and what comes back only
    reflects where the optimiser stopped.
    """
    if len(cells.models) < 2:
        return True
    n_comp, _ = win_graph_components(cells)
    if n_comp > 1:
        warnings.warn(
            f"Bradley-Terry MLE does not exist: the win graph has {n_comp} strongly "
            "connected components (some model(s) never lost, or never won, against "
            "the rest); their ratings diverge and the returned values are not meaningful",
            RuntimeWarning,
            stacklevel=stacklevel,
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


def fit_cells(cells: Cells, base: float = 10, tol: float = 1e-10, max_iter: int = 10_000,
              polish: bool = True) -> np.ndarray:
    """The BT coefficients (mean 0, ``log(base)`` units) of ``cells``' models."""
    return _fit(cells.pairs, cells.outcomes, cells.counts, len(cells.models), math.log(base), tol,
                max_iter, polish=polish)


def to_elo(models, theta, scale, init_rating, anchor, anchor_rating) -> dict[str, float]:
    """``scale * theta + init_rating``, then shift so ``anchor`` sits at ``anchor_rating``."""
    ratings = scale * theta + init_rating
    if anchor is not None:
        if anchor not in models:
            raise ValueError(f"anchor model {anchor!r} does not appear in the battles")
        ratings = ratings + (anchor_rating - ratings[models.index(anchor)])
    return sorted_desc(dict(zip(models, ratings)))


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
    cells = aggregate(as_table(battles), weights)
    exists = mle_exists(cells)
    theta = fit_cells(cells, base, tol, max_iter, polish=exists)
    return to_elo(cells.models, theta, scale, init_rating, anchor, anchor_rating)

