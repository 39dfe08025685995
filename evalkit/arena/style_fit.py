"""Style-controlled Bradley–Terry at LMArena scale: per-battle arrays, Newton steps, weighted bootstrap.

``compute_bt_style`` (``evalkit.arena.style``) is the reference: FastChat's
``construct_style_matrices`` + ``fit_mle_elo`` on per-battle Python objects.
Here the same likelihood is fitted on numpy columns (model indices, outcome,
a ``k x n`` standardised style design): each Newton step is a handful of
``bincount``s and one ``k x n`` product, O(battles) with small constants and
no ``n x models`` design matrix (FastChat's is 2 n x (models + k) dense).

The style covariates differ from battle to battle, so battles cannot be
collapsed into (pair, outcome) cells as plain BT does; the bootstrap instead
resamples *weights*: drawing ``n`` battles with replacement and counting how
often each was drawn gives a ``Multinomial(n, 1/n, ..., 1/n)`` vector of
counts, and the likelihood of the resample is the likelihood of the original
battles weighted by those counts.  Each round draws that vector (seeded, one
``integers`` + ``bincount``, the exact index resample counted) and refits
warm-started at the full-data optimum.  As FastChat's bootstrap, the design is
standardised once on the full data.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from .bt import _fit
from .cells import Cells, win_graph_components

__all__ = ["StyleProblem", "bootstrap_style", "fit_style", "standardise"]


def standardise(diff: np.ndarray) -> np.ndarray:
    """``(diff - mean) / std`` per feature over the battles (``diff`` is n x k), as
    ``compute_bt_style``; a constant feature is left at zero.  Returns k x n."""
    mean = diff.mean(axis=0)
    std = diff.std(axis=0)
    std[std == 0] = 1.0
    return np.ascontiguousarray(((diff - mean) / std).T)


@dataclass(frozen=True)
class StyleProblem:
    """Battles as arrays: ``a``/``b`` model indices into ``models``, ``outcome`` model A's
    score (1, 0.5, 0), ``design`` the k x n standardised style covariates."""

    models: list[str]
    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    design: np.ndarray

    @property
    def n(self) -> int:
        return int(len(self.a))

    @property
    def k(self) -> int:
        return int(self.design.shape[0])

    def cells(self, weights: np.ndarray | None = None) -> Cells:
        """The (pair, outcome) cells with the battles' (weighted) counts: the win graph."""
        m = len(self.models)
        key = (self.a.astype(np.int64) * m + self.b) * 3 + np.rint(self.outcome * 2).astype(np.int64)
        counts = np.bincount(key, weights, minlength=m * m * 3)
        live = np.flatnonzero(counts)
        pair, out = np.divmod(live, 3)
        return Cells(self.models, np.stack(np.divmod(pair, m), axis=1), out / 2.0, counts[live])


class _Newton:
    """Gradient and Hessian of the weighted style-BT log-loss (summed, plus
    ``l2/2 * ||params||^2``) on a fixed problem; ``fit`` runs damped Newton steps."""

    def __init__(self, prob: StyleProblem, alpha: float, l2: float):
        self.p, self.alpha, self.l2 = prob, alpha, l2
        self.m = len(prob.models)
        self.key = prob.a.astype(np.int64) * self.m + prob.b

    def _z(self, x):
        th = x[: self.m]
        return (self.alpha * (th[:, None] - th[None, :])).ravel()[self.key] + self.p.design.T @ x[self.m:]

    def grad_hess(self, x, w, z):
        p, m, al = self.p, self.m, self.alpha
        s = expit(z)
        g = w * (s - p.outcome)
        h = w * s * (1.0 - s)
        grad = np.empty_like(x)
        grad[:m] = al * (np.bincount(p.a, g, minlength=m) - np.bincount(p.b, g, minlength=m))
        grad[m:] = p.design @ g
        pair = np.bincount(self.key, h, minlength=m * m).reshape(m, m)
        pair = pair + pair.T
        H = np.empty((x.size, x.size))
        H[:m, :m] = -al * al * pair
        H[np.arange(m), np.arange(m)] = al * al * pair.sum(axis=1)
        hx = p.design * h
        cross = np.stack([np.bincount(p.a, r, minlength=m) - np.bincount(p.b, r, minlength=m) for r in hx], 1)
        H[:m, m:] = al * cross
        H[m:, :m] = al * cross.T
        H[m:, m:] = hx @ p.design.T
        if self.l2:
            grad += self.l2 * x
            H[np.diag_indices_from(H)] += self.l2
        return grad, H

    def fit(self, w, x0, active, max_iter=50, step_tol=0.0):
        """Damped Newton from ``x0`` on the models in ``active`` (others stay 0; the
        model part is centred over ``active`` without a penalty).  A step is kept when
        it shrinks the largest gradient entry (else halved).  ``step_tol > 0`` stops
        after a step smaller than that (its error is then ~step^2: the bootstrap's
        choice, one gradient fewer).  Returns ``(x, max |gradient| / total weight)``,
        the gradient 0.0 when the stop was by ``step_tol``."""
        m, total = self.m, float(w.sum())
        idx = np.concatenate([np.flatnonzero(active), np.arange(m, m + self.p.k)])
        n_act = int(active.sum())
        gauge = np.zeros((idx.size, idx.size))
        if not self.l2:
            gauge[:n_act, :n_act] = 1.0 / n_act

        def centred(v):
            if not self.l2:
                v[:m][active] -= v[:m][active].mean()
            return v

        x = np.zeros(m + self.p.k)
        x[idx] = x0[idx]
        x = centred(x)
        grad, H = self.grad_hess(x, w, self._z(x))
        gmax = float(np.abs(grad[idx]).max()) / total
        for _ in range(max_iter):
            if gmax < 1e-13:
                break
            try:
                sub = np.linalg.solve(H[np.ix_(idx, idx)] + gauge, -grad[idx])
            except np.linalg.LinAlgError:
                break
            step = np.zeros_like(x)
            step[idx] = sub
            big = float(np.abs(sub).max())
            if step_tol and big < step_tol:
                return centred(x + step), 0.0
            t = min(1.0, 4.0 / big) if big > 0 else 1.0        # at most ~1,600 Elo points per step
            for _ in range(30):
                trial = centred(x + t * step)
                gt, Ht = self.grad_hess(trial, w, self._z(trial))
                gtmax = float(np.abs(gt[idx]).max()) / total
                if gtmax < gmax:
                    break
                t *= 0.5
            else:
                break
            x, grad, H, gmax = trial, gt, Ht, gtmax
        return x, gmax


def _check(prob: StyleProblem, w: np.ndarray, active: np.ndarray, stacklevel: int) -> bool:
    """The win graph over the active models is strongly connected (else the MLE does not exist)."""
    cells = prob.cells(w)
    if active.all():
        sub = cells
    else:
        sub = cells.subset(active)
    n_comp = win_graph_components(sub)[0] if len(sub.models) > 1 else 1
    if n_comp > 1:
        warnings.warn(f"Bradley-Terry MLE does not exist: the win graph has {n_comp} strongly connected "
                      "components; the style-controlled ratings of this fit are not meaningful",
                      RuntimeWarning, stacklevel=stacklevel)
    return n_comp == 1


def fit_style(prob: StyleProblem, weights: np.ndarray | None = None, *, base: float = 10, l2: float = 0.0,
              x0: np.ndarray | None = None, _solver: _Newton | None = None, _step_tol: float = 0.0) -> np.ndarray:
    """The style-BT parameters ``[theta (models, log(base) units), beta (k, natural log)]``;
    models without weight are NaN.  The same optimum as ``compute_bt_style`` (which
    fits the same likelihood by L-BFGS + Newton polish) to ~1e-12; when Newton
    cannot get there (no finite MLE) that L-BFGS fit is used, with its warning."""
    w = np.ones(prob.n) if weights is None else np.asarray(weights, dtype=np.float64)
    m = len(prob.models)
    solver = _solver or _Newton(prob, math.log(base), l2)
    seen = (np.bincount(prob.a, w, minlength=m) + np.bincount(prob.b, w, minlength=m)) > 0
    start = np.zeros(m + prob.k) if x0 is None else np.nan_to_num(x0)
    exists = l2 > 0 or _check(prob, w, seen, stacklevel=3)
    x, gmax = solver.fit(w, start, seen, step_tol=_step_tol) if exists else (start, np.inf)
    if not gmax < 1e-10:
        live = w > 0
        sub_idx = np.cumsum(seen) - 1
        pairs = np.stack([sub_idx[prob.a[live]], sub_idx[prob.b[live]]], axis=1)
        fitted = _fit(pairs, prob.outcome[live], w[live], int(seen.sum()), math.log(base), 1e-10, 10_000,
                      n_extra=prob.k, design=prob.design[:, live].T, l2=l2, polish=exists)
        x = np.zeros(m + prob.k)
        x[np.flatnonzero(seen)] = fitted[: int(seen.sum())]
        x[m:] = fitted[int(seen.sum()):]
    x = x.copy()
    x[:m][~seen] = np.nan
    return x


def bootstrap_style(prob: StyleProblem, rounds: int, seed: int | np.random.Generator = 0, *, base: float = 10,
                    l2: float = 0.0, x0: np.ndarray | None = None, progress: bool = False) -> np.ndarray:
    """``rounds x (models + k)`` parameters, each fitted on a resample of the battles given as
    weights (how many times each battle was drawn); models that drew no battle are NaN."""
    if rounds < 1:
        raise ValueError("rounds must be >= 1")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    solver = _Newton(prob, math.log(base), l2)
    if x0 is None:
        x0 = fit_style(prob, base=base, l2=l2, _solver=solver)
    out = np.empty((rounds, len(prob.models) + prob.k))
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=rounds, desc="style bootstrap", unit="round", leave=False)
    for r in range(rounds):
        w = np.bincount(rng.integers(0, prob.n, prob.n), minlength=prob.n).astype(np.float64)
        out[r] = fit_style(prob, w, base=base, l2=l2, x0=x0, _solver=solver, _step_tol=1e-5)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return out
