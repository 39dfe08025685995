"""How big a drop can a comparison of this size detect?

For paired 0/1 metrics the answer depends on n and on the *discordance* psi: the share of items
on which the two models disagree (one right, the other wrong). Under a true drop D (in accuracy,
0..1) the per-item difference has variance psi - D^2, so the one-sided McNemar / score test at
level a flags it with power ~ Phi((sqrt(n)·(D - m) - z_a·sqrt(psi - m^2)) / sqrt(psi - D^2))
(Connor 1987, with the non-inferiority margin m added). The minimum detectable drop (MDD) is the D
where that power reaches the target (0.8 by default). With ``tests`` primary tests Holm's first
step runs at a / tests, which is what the MDD uses (a worst case for one regressed metric).

``exact_power_binary`` computes the exact power of the exact McNemar test (margin 0) by summing
over the number of discordant pairs; ``mdd_binary`` uses it when the margin is 0.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import optimize
from scipy import stats as sps


def _z(alpha: float, tests: int) -> float:
    return float(sps.norm.isf(alpha / max(1, tests)))


def power_binary(n: int, discordance: float, drop: float, alpha: float = 0.05, margin: float = 0.0,
                 tests: int = 1) -> float:
    """Normal-approximation power to flag a true drop ``drop`` (fraction) as a regression."""
    psi = float(discordance)
    if not 0 < psi <= 1 or drop > psi:
        return float("nan")
    null_var = max(psi - margin * margin, 1e-15)
    alt_var = max(psi - drop * drop, 1e-15)
    return float(sps.norm.cdf((math.sqrt(n) * (drop - margin) - _z(alpha, tests) * math.sqrt(null_var))
                              / math.sqrt(alt_var)))


def mdd_binary(n: int, discordance: float, alpha: float = 0.05, power: float = 0.8, margin: float = 0.0,
               tests: int = 1) -> float:
    """Smallest true drop (fraction) flagged with probability ``power``; nan if none can be.

    With margin 0 it solves the exact McNemar power (monotone in the drop: the critical values do
    not depend on it), otherwise the score-test approximation above.
    """
    psi = float(discordance)
    if n <= 0 or not 0 < psi <= 1:
        return float("nan")
    if margin == 0:
        f = lambda d: exact_power_binary(n, psi, d, alpha, tests) - power  # noqa: E731
    else:
        f = lambda d: power_binary(n, psi, d, alpha, margin, tests) - power  # noqa: E731
    lo, hi = margin, psi
    if f(hi) < 0:
        return float("nan")
    if f(lo) >= 0:
        return float(lo)
    return float(optimize.brentq(f, lo, hi, xtol=1e-10))


def exact_power_binary(n: int, discordance: float, drop: float, alpha: float = 0.05, tests: int = 1) -> float:
    """Exact power of the one-sided exact McNemar test (margin 0) at level alpha / tests.

    The number of discordant pairs K is Binomial(n, psi); given K = k, the right->wrong count is
    Binomial(k, (psi + drop) / (2 psi)) and the test rejects when it reaches the smallest b with
    P(Binomial(k, 1/2) >= b) <= alpha / tests.
    """
    psi = float(discordance)
    if not 0 < psi <= 1 or not 0 <= drop <= psi:
        return float("nan")
    k = np.arange(n + 1)
    crit = sps.binom.isf(alpha / max(1, tests), k, 0.5) + 1  # reject when b >= crit
    q = (psi + drop) / (2 * psi)
    p_reject = np.where(crit <= k, sps.binom.sf(crit - 1, k, q), 0.0)
    return float(np.sum(sps.binom.pmf(k, n, psi) * p_reject))


def mdd_mean(n: int, sd: float, alpha: float = 0.05, power: float = 0.8, margin: float = 0.0,
             tests: int = 1) -> float:
    """MDD for a mean of paired differences with per-item (or per-cluster) standard deviation ``sd``."""
    if n <= 1 or not (sd is not None and math.isfinite(sd)):
        return float("nan")
    return float(margin + (_z(alpha, tests) + sps.norm.ppf(power)) * sd / math.sqrt(n))


def mdd_from_se(se: float, alpha: float = 0.05, power: float = 0.8, margin: float = 0.0, tests: int = 1) -> float:
    """MDD from a bootstrap standard error of the difference (corpus metrics)."""
    if se is None or not math.isfinite(se):
        return float("nan")
    return float(margin + (_z(alpha, tests) + sps.norm.ppf(power)) * se)
