"""Uncertainty for every number we report.

- Means of per-sample values: analytic standard error (sample std / sqrt(n)); the 95% interval is
  Wilson's for 0/1 metrics (well behaved near 0 and 1) and Student-t otherwise.
- Corpus-level metrics (BLEU, perplexity, ...): a seeded bootstrap that resamples items and
  recomputes the corpus statistic; the stderr is the standard deviation of the replicates (not that
  divided by sqrt(replicates)), the interval their 2.5/97.5 percentiles.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass
from typing import Callable, Optional, Sequence

import numpy as np
from scipy import stats as sps

Z95 = 1.959963984540054


@dataclass
class MetricValue:
    value: float
    stderr: Optional[float]
    ci_low: Optional[float]
    ci_high: Optional[float]
    n: int
    kind: str  # "mean" or "corpus"
    higher_is_better: bool = True

    def to_dict(self) -> dict:
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in asdict(self).items()}


def derive_seed(*parts) -> int:
    """A 63-bit seed from the run seed and any identifiers (task, doc id, purpose)."""
    h = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(h[:8], "big") >> 1


def mean_metric(values: Sequence[float], higher_is_better: bool = True) -> MetricValue:
    x = np.asarray([v for v in values if v is not None], dtype=float)
    n = len(x)
    if n == 0:
        return MetricValue(float("nan"), None, None, None, 0, "mean", higher_is_better)
    m = float(x.mean())
    if n == 1:
        return MetricValue(m, None, None, None, 1, "mean", higher_is_better)
    se = float(x.std(ddof=1) / math.sqrt(n))
    if np.all((x == 0) | (x == 1)):
        lo, hi = wilson_interval(m, n)
    else:
        t = float(sps.t.ppf(0.975, n - 1))
        lo, hi = m - t * se, m + t * se
        if x.min() >= 0 and x.max() <= 1:  # bounded scores (ROUGE, F1): keep the interval in range
            lo, hi = max(0.0, lo), min(1.0, hi)
    return MetricValue(m, se, lo, hi, n, "mean", higher_is_better)


def wilson_interval(p: float, n: int, z: float = Z95) -> tuple[float, float]:
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # at p = 0 (or 1) the bound is exactly 0 (or 1); the formula only reaches it up to rounding
    low = 0.0 if p <= 0 else max(0.0, centre - half)
    high = 1.0 if p >= 1 else min(1.0, centre + half)
    return low, high


def bootstrap_corpus(items: Sequence, statistic: Callable[[Sequence], float], seed: int,
                     replicates: int = 1000, higher_is_better: bool = True) -> MetricValue:
    """Point estimate on all items plus a bootstrap over items for the corpus statistic."""
    items = list(items)
    n = len(items)
    value = float(statistic(items)) if n else float("nan")
    if n < 2 or replicates < 2:
        return MetricValue(value, None, None, None, n, "corpus", higher_is_better)
    rng = np.random.default_rng(seed)
    reps = np.empty(replicates)
    for b in range(replicates):
        idx = rng.integers(0, n, n)
        reps[b] = statistic([items[i] for i in idx])
    reps = reps[np.isfinite(reps)]
    if len(reps) < 2:
        return MetricValue(value, None, None, None, n, "corpus", higher_is_better)
    lo, hi = np.percentile(reps, [2.5, 97.5])
    return MetricValue(value, float(reps.std(ddof=1)), float(lo), float(hi), n, "corpus", higher_is_better)
