"""Uncertainty for every number we report.

- Means of per-sample values: analytic standard error (sample std / sqrt(n)); the 95% interval is
  Wilson's for 0/1 metrics (well behaved near 0 and 1) and Student-t otherwise.
- Corpus-level metrics (BLEU, perplexity, ...): a seeded bootstrap that resamples items and
  recomputes the corpus statistics (``bootstrap_group``: one computation may give several names,
  all from the same resamples); the stderr is the standard deviation of the replicates (not that
  divided by sqrt(replicates)), the interval their 2.5/97.5 percentiles.
"""
from __future__ import annotations

import hashlib
import math
import numbers
from typing import Callable, Mapping, Optional, Sequence, Union

import numpy as np
from scipy import stats as sps

from evalkit.records.values import MetricValue  # noqa: F401 (the record's typed metric value)

Z95 = 1.959963984540054


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
    """Point estimate on all items plus a bootstrap over items for one corpus statistic (the
    one-name case of ``bootstrap_group``: the same resamples, the same numbers)."""
    return bootstrap_group(items, lambda xs: {"value": statistic(xs)}, ("value",), seed, replicates,
                           {"value": higher_is_better})["value"]


def _count(items) -> int:
    if isinstance(items, Mapping):
        sizes = {len(v) for v in items.values()}
        if len(sizes) > 1:
            raise ValueError(f"bootstrap items: columns of different lengths {sorted(sizes)}")
        return sizes.pop() if sizes else 0
    return len(items)


def _take(items, idx: np.ndarray):
    """The items at ``idx``: rows of an array, rows of every column of a dict of arrays, else a list."""
    if isinstance(items, np.ndarray):
        return items[idx]
    if isinstance(items, Mapping):
        return {k: np.asarray(v)[idx] for k, v in items.items()}
    return [items[i] for i in idx]


def _number(v) -> float:
    """A finite or non-finite float; anything that is not a real number (None, a list, a bool) is NaN."""
    if isinstance(v, numbers.Real) and not isinstance(v, bool):
        return float(v)
    return float("nan")


def bootstrap_group(items, compute: Callable[..., Mapping[str, float]], names: Sequence[str], seed: int,
                    replicates: int = 1000, higher_is_better: Union[bool, Mapping[str, bool]] = True,
                    full: Optional[Mapping[str, float]] = None) -> dict[str, MetricValue]:
    """Several corpus statistics from one computation, each with a bootstrap CI from the same resamples.

    ``compute(items) -> {name: value}`` runs once on all items (or ``full`` is that result, already
    computed) and once per replicate on items drawn with replacement (``rng.integers(0, n, n)``, one
    draw per replicate, whatever the number of names). ``items`` is a sequence (resampled as a list),
    an array (resampled by rows) or a dict of equally long arrays (columns of one table). A name a
    replicate does not give as a finite number is left out of that name's replicates; the stderr is
    the standard deviation of a name's replicates, its CI their 2.5/97.5 percentiles."""
    names = tuple(names)
    hib = {k: (higher_is_better if isinstance(higher_is_better, bool) else higher_is_better[k]) for k in names}
    n = _count(items)
    if n and full is None:
        full = compute(items)
    out = {k: MetricValue(_number(full.get(k)) if n else float("nan"), None, None, None, n, "corpus", hib[k])
           for k in names}
    if n < 2 or replicates < 2:
        return out
    rng = np.random.default_rng(seed)
    reps = {k: [] for k in names}
    for _ in range(replicates):
        res = compute(_take(items, rng.integers(0, n, n)))
        for k in names:
            v = _number(res.get(k))
            if math.isfinite(v):
                reps[k].append(v)
    for k in names:
        r = np.asarray(reps[k], dtype=float)
        if len(r) >= 2:
            lo, hi = np.percentile(r, [2.5, 97.5])
            out[k] = MetricValue(out[k].value, float(r.std(ddof=1)), float(lo), float(hi), n, "corpus", hib[k])
    return out
