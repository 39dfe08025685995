"""Paired tests for "is the candidate worse than the baseline by more than a margin?".

Everything here works in *improvement* units: ``delta = sign * (candidate - baseline)`` with
``sign = +1`` when higher is better, so a regression is always a negative delta. Each test returns
two one-sided p-values:

- ``p_regress`` for H0: delta >= -margin against H1: delta < -margin (the candidate is worse by more
  than the margin). Rejecting it is a *regression*.
- ``p_improve`` for H0: delta <= 0 against H1: delta > 0. Rejecting it is an *improvement*.

and a two-sided ``1 - 2*alpha`` interval for delta (90% at alpha 0.05: the interval whose ends are
the two one-sided tests at level alpha, as non-inferiority trials report it).

Which test:

- 0/1 metric, one row per item: exact McNemar (a binomial test on the discordant pairs, optionally
  mid-p) when the margin is 0; with a margin, Tango's (1998) score test for a difference of paired
  proportions against the shifted null (exact conditional tests do not exist there: the null is
  not a single binomial). The interval inverts Tango's score test.
- Other mean metrics, or several rows per item (clusters: pass@k samples, MT-Bench turns, repeats):
  with margin 0 a sign-flip permutation test over clusters (exact under exchangeability, which is
  what "the two models are the same" means); with a margin, the paired cluster bootstrap.
- Corpus metrics (BLEU, ROUGE, perplexity): paired cluster bootstrap that recomputes the corpus
  statistic for both systems on the same resampled items.

Bootstrap p-values are the percentile-interval inversions, ``(1 + #{delta* >= -margin}) / (B + 1)``,
so ``p_regress < alpha`` exactly when the interval's upper end lies below ``-margin``.
Every random draw comes from a seeded ``numpy.random.Generator``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np
from scipy import optimize
from scipy import stats as sps


@dataclass
class PairedResult:
    """One paired comparison in improvement units (see the module docstring)."""

    delta: float
    ci_low: float
    ci_high: float
    p_regress: float
    p_improve: float
    method: str
    n: int
    n_clusters: int
    details: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# 0/1 metrics: McNemar and Tango's score test
# ---------------------------------------------------------------------------------------------

def mcnemar_exact(b, c, mid_p: bool = False):
    """One-sided exact McNemar p-values, vectorised over arrays of counts.

    ``b``: items right in the baseline and wrong in the candidate (right -> wrong);
    ``c``: wrong -> right. Returns ``(p_regress, p_improve)`` for margin 0: under H0 the ``b + c``
    discordant pairs split as Binomial(b + c, 1/2). With ``mid_p`` half the probability of the
    observed count is dropped (less conservative; size no longer guaranteed <= alpha).
    """
    b = np.asarray(b, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    k = b + c
    p_reg = sps.binom.sf(b - 1, k, 0.5)
    p_imp = sps.binom.sf(c - 1, k, 0.5)
    if mid_p:
        p_reg = p_reg - 0.5 * sps.binom.pmf(b, k, 0.5)
        p_imp = p_imp - 0.5 * sps.binom.pmf(c, k, 0.5)
    p_reg = np.where(k == 0, 1.0, p_reg)
    p_imp = np.where(k == 0, 1.0, p_imp)
    return np.clip(p_reg, 0.0, 1.0), np.clip(p_imp, 0.0, 1.0)


def tango_restricted_mle(b, c, n, d0):
    """Maximum-likelihood (p_b, p_c) of the discordant cells under the constraint p_c - p_b = d0.

    The multinomial likelihood b·log p_b + c·log p_c + (n-b-c)·log(1-p_b-p_c) with p_c = p_b + d0
    has a quadratic score equation in p_b; its positive root is the restricted estimate.
    """
    b = np.asarray(b, dtype=float)
    c = np.asarray(c, dtype=float)
    n = np.asarray(n, dtype=float)
    r = n - b - c
    u = 1.0 - d0
    lin = b * (u - 2.0 * d0) + c * u - 2.0 * r * d0
    disc = lin * lin + 8.0 * n * b * d0 * u
    pb = (lin + np.sqrt(np.maximum(disc, 0.0))) / (4.0 * n)
    pb = np.clip(pb, max(0.0, -d0), None)
    return pb, pb + d0


def tango_z(b, c, n, d0):
    """Tango's score statistic for H0: p_c - p_b = d0 (positive when the data favour a larger delta)."""
    b = np.asarray(b, dtype=float)
    c = np.asarray(c, dtype=float)
    n = np.asarray(n, dtype=float)
    pb, pc = tango_restricted_mle(b, c, n, d0)
    var = n * (pb + pc - d0 * d0)
    num = c - b - n * d0
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(var > 0, num / np.sqrt(np.where(var > 0, var, 1.0)), np.sign(num) * np.inf)
    return np.where((var <= 0) & (num == 0), 0.0, z)


def binary_pvalues(b, c, n, margin: float = 0.0, mid_p: bool = False):
    """``(p_regress, p_improve)`` for paired 0/1 data, vectorised; ``margin`` in metric units (0..1)."""
    p_reg, p_imp = mcnemar_exact(b, c, mid_p=mid_p)
    if margin > 0:
        p_reg = sps.norm.cdf(tango_z(b, c, n, -margin))
    return p_reg, p_imp


def tango_interval(b: int, c: int, n: int, alpha: float) -> tuple[float, float]:
    """Two-sided ``1 - 2*alpha`` score interval for p_c - p_b (Tango 1998), by root finding."""
    if n <= 0:
        return float("nan"), float("nan")
    zc = float(sps.norm.ppf(1 - alpha))
    est = (c - b) / n
    eps = 1e-10

    def f(d, target):
        return float(tango_z(b, c, n, d)) - target

    lo_edge, hi_edge = -1.0 + eps, 1.0 - eps
    est = min(max(est, lo_edge), hi_edge)
    # z(d) decreases in d: the lower end solves z = +zc below the estimate, the upper z = -zc above it
    lo = lo_edge if f(lo_edge, zc) <= 0 else optimize.brentq(f, lo_edge, est, args=(zc,), xtol=1e-12)
    hi = hi_edge if f(hi_edge, -zc) >= 0 else optimize.brentq(f, est, hi_edge, args=(-zc,), xtol=1e-12)
    return float(lo), float(hi)


def paired_binary(base: np.ndarray, cand: np.ndarray, margin: float, alpha: float,
                  mid_p: bool = False) -> PairedResult:
    """Exact McNemar / Tango test on aligned 0/1 arrays (higher is better assumed by the caller)."""
    base = np.asarray(base, dtype=float)
    cand = np.asarray(cand, dtype=float)
    n = len(base)
    b = int(np.sum((base == 1) & (cand == 0)))
    c = int(np.sum((base == 0) & (cand == 1)))
    p_reg, p_imp = binary_pvalues(b, c, n, margin, mid_p)
    lo, hi = tango_interval(b, c, n, alpha)
    method = ("exact McNemar" + (" (mid-p)" if mid_p else "")) if margin == 0 else "Tango score (margin)"
    return PairedResult((c - b) / n if n else float("nan"), lo, hi, float(p_reg), float(p_imp), method, n, n,
                        {"right_to_wrong": b, "wrong_to_right": c, "discordance": (b + c) / n if n else None})


# ---------------------------------------------------------------------------------------------
# Mean metrics with clusters or continuous values: sign-flip permutation and cluster bootstrap
# ---------------------------------------------------------------------------------------------

def cluster_sums(delta: np.ndarray, clusters: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster sums of per-row improvements and per-cluster row counts."""
    codes, inv = np.unique(clusters, return_inverse=True)
    sums = np.bincount(inv, weights=delta, minlength=len(codes))
    sizes = np.bincount(inv, minlength=len(codes)).astype(float)
    return sums, sizes


def _chunks(total: int, size: int):
    for start in range(0, total, size):
        yield min(size, total - start)


def sign_flip_pvalue(sums: np.ndarray, n_rows: float, rng: np.random.Generator, replicates: int,
                     alternative: str) -> float:
    """Paired permutation test of a zero mean: flip the sign of whole clusters.

    ``alternative`` "less" gives P(T* <= T) (evidence that delta < 0), "greater" P(T* >= T).
    With at most ``log2(replicates)`` clusters every sign pattern is enumerated (exact test).
    """
    g = len(sums)
    obs = sums.sum()
    tol = 1e-12 * max(1.0, np.abs(sums).sum())
    if g <= 16 and 2 ** g <= replicates:
        signs = 1 - 2 * ((np.arange(2 ** g)[:, None] >> np.arange(g)) & 1)
        stats = signs @ sums
        hit = stats <= obs + tol if alternative == "less" else stats >= obs - tol
        return float(hit.mean())
    count = 0
    for size in _chunks(replicates, 1000):
        signs = rng.integers(0, 2, size=(size, g)) * 2 - 1
        stats = signs @ sums
        count += int(np.sum(stats <= obs + tol if alternative == "less" else stats >= obs - tol))
    return (1 + count) / (replicates + 1)


def bootstrap_mean_delta(sums: np.ndarray, sizes: np.ndarray, rng: np.random.Generator,
                         replicates: int) -> np.ndarray:
    """Cluster bootstrap replicates of the mean improvement (ratio of resampled sums to sizes)."""
    g = len(sums)
    out = np.empty(replicates)
    i = 0
    for size in _chunks(replicates, max(1, 2_000_000 // max(1, g))):
        idx = rng.integers(0, g, size=(size, g))
        out[i:i + size] = sums[idx].sum(axis=1) / sizes[idx].sum(axis=1)
        i += size
    return out


def bootstrap_pvalues(reps: np.ndarray, margin: float) -> tuple[float, float]:
    """Percentile-inversion p-values: ``p_regress`` from replicates at or above ``-margin``."""
    reps = reps[np.isfinite(reps)]
    b = len(reps)
    if b == 0:
        return float("nan"), float("nan")
    return (1 + int(np.sum(reps >= -margin))) / (b + 1), (1 + int(np.sum(reps <= 0))) / (b + 1)


def percentile_interval(reps: np.ndarray, alpha: float) -> tuple[float, float]:
    reps = reps[np.isfinite(reps)]
    if len(reps) < 2:
        return float("nan"), float("nan")
    lo, hi = np.percentile(reps, [100 * alpha, 100 * (1 - alpha)])
    return float(lo), float(hi)


def paired_mean(delta: np.ndarray, clusters: np.ndarray, margin: float, alpha: float,
                rng: np.random.Generator, replicates: int = 2000, force_bootstrap: bool = False) -> PairedResult:
    """Paired test of the mean per-row improvement, resampling or flipping whole clusters."""
    delta = np.asarray(delta, dtype=float)
    sums, sizes = cluster_sums(delta, clusters)
    n = len(delta)
    est = float(delta.mean()) if n else float("nan")
    reps = bootstrap_mean_delta(sums, sizes, rng, replicates)
    lo, hi = percentile_interval(reps, alpha)
    p_reg_boot, p_imp_boot = bootstrap_pvalues(reps, margin)
    if force_bootstrap:
        p_reg, p_imp, method = p_reg_boot, p_imp_boot, "paired bootstrap"
    else:
        p_imp = sign_flip_pvalue(sums, n, rng, replicates, "greater")
        if margin == 0:
            p_reg, method = sign_flip_pvalue(sums, n, rng, replicates, "less"), "sign-flip permutation"
        else:
            p_reg, method = p_reg_boot, "paired bootstrap (margin); sign-flip for improvement"
    if len(sums) < n:
        method += f", {len(sums)} clusters"
    per_cluster = sums / sizes
    sd = float(np.std(per_cluster, ddof=1)) if len(sums) > 1 else float("nan")
    return PairedResult(est, lo, hi, float(p_reg), float(p_imp), method, n, len(sums),
                        {"sd_cluster_delta": sd, "bootstrap_se": float(np.std(reps, ddof=1))})


# ---------------------------------------------------------------------------------------------
# Corpus metrics: recompute on resampled items
# ---------------------------------------------------------------------------------------------

def paired_corpus(base_items: Sequence, cand_items: Sequence, statistic: Callable[[list], float], sign: float,
                  clusters: np.ndarray, margin: float, alpha: float, rng: np.random.Generator,
                  replicates: int = 1000) -> PairedResult:
    """Paired cluster bootstrap of ``sign * (statistic(cand) - statistic(base))``.

    Both systems are scored on the same resampled clusters in every replicate, so item difficulty
    cancels out of the difference (Koehn 2004's paired bootstrap, clustered).
    """
    base_items, cand_items = list(base_items), list(cand_items)
    n = len(base_items)
    est = sign * (float(statistic(cand_items)) - float(statistic(base_items)))
    codes, inv = np.unique(clusters, return_inverse=True)
    members = [np.flatnonzero(inv == g) for g in range(len(codes))]
    g = len(members)
    reps = np.empty(replicates)
    for r in range(replicates):
        pick = rng.integers(0, g, g)
        idx = np.concatenate([members[j] for j in pick])
        try:
            reps[r] = sign * (float(statistic([cand_items[i] for i in idx]))
                              - float(statistic([base_items[i] for i in idx])))
        except (ZeroDivisionError, ValueError, OverflowError):
            reps[r] = np.nan
    lo, hi = percentile_interval(reps, alpha)
    p_reg, p_imp = bootstrap_pvalues(reps, margin)
    finite = reps[np.isfinite(reps)]
    return PairedResult(est, lo, hi, p_reg, p_imp, "paired bootstrap (corpus)" + (f", {g} clusters" if g < n else ""),
                        n, g, {"bootstrap_se": float(np.std(finite, ddof=1)) if len(finite) > 1 else None,
                               "replicates": int(len(finite))})


def is_binary(*arrays: np.ndarray) -> bool:
    return all(np.all((a == 0) | (a == 1)) for a in arrays)


def safe_float(x) -> Optional[float]:
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else float(x)
