"""Adjusting p-values across the task x metric tests of one comparison.

Holm–Bonferroni (default) controls the family-wise error rate, P(any false "regressed"), under any
dependence between the tests (gsm8k's strict/flexible/numeric matches are strongly dependent).
Benjamini–Hochberg controls the false discovery rate instead (valid for independent or positively
dependent tests) and flags more when many tasks are compared. Both act on the last axis, so a
simulation can adjust thousands of families at once.
"""
from __future__ import annotations

import numpy as np

METHODS = ("holm", "bh", "none")


def holm(p) -> np.ndarray:
    """Holm step-down adjusted p-values: max over j <= i of (k - j + 1) * p_(j), capped at 1."""
    p = np.asarray(p, dtype=float)
    k = p.shape[-1]
    if k == 0:
        return p
    order = np.argsort(p, axis=-1, kind="stable")
    ps = np.take_along_axis(p, order, axis=-1)
    adj = np.minimum(1.0, np.maximum.accumulate(ps * (k - np.arange(k)), axis=-1))
    out = np.empty_like(adj)
    np.put_along_axis(out, order, adj, axis=-1)
    return out


def benjamini_hochberg(p) -> np.ndarray:
    """BH step-up adjusted p-values: min over j >= i of k / j * p_(j), capped at 1."""
    p = np.asarray(p, dtype=float)
    k = p.shape[-1]
    if k == 0:
        return p
    order = np.argsort(p, axis=-1, kind="stable")
    ps = np.take_along_axis(p, order, axis=-1)
    scaled = ps * k / np.arange(1, k + 1)
    adj = np.minimum(1.0, np.flip(np.minimum.accumulate(np.flip(scaled, -1), axis=-1), -1))
    out = np.empty_like(adj)
    np.put_along_axis(out, order, adj, axis=-1)
    return out


def adjust(p, method: str = "holm") -> np.ndarray:
    if method == "holm":
        return holm(p)
    if method == "bh":
        return benjamini_hochberg(p)
    if method == "none":
        return np.asarray(p, dtype=float)
    raise ValueError(f"unknown correction {method!r}; allowed: {', '.join(METHODS)}")
