"""Battles collapsed once into (model A, model B, outcome) cells with counts.

A Bradley–Terry likelihood only sees how many battles fell in each cell, so a
million battles between 120 models become at most 120 * 119 * 3 cells; the
fit, and every bootstrap round, then cost O(cells) instead of O(battles).
This is FastChat's ``preprocess_battles_to_arrays``, done with one
``bincount`` over integer keys.  Cells come out sorted by ``(i_a, i_b,
outcome)``, the order ``numpy.unique`` gives, so fits are bit-for-bit those of
the per-battle aggregation they replace.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from .table import BattleTable

__all__ = ["Cells", "aggregate", "win_graph_components"]

# winner code (model_a, model_b, tie, tie (bothbad)) -> outcome index (A's score * 2)
_OUTCOME_INDEX = np.array([2, 0, 1, 1], dtype=np.int64)
_SLICE = 1 << 20       # battles per slice: temporaries stay ~40 MB whatever the number of battles


@dataclass(frozen=True)
class Cells:
    """``pairs[k] = (i_a, i_b)`` into ``models``; ``outcomes[k]`` = model A's score
    (1, 0.5 or 0); ``counts[k]`` = battles (or total weight) in that cell."""

    models: list[str]
    pairs: np.ndarray
    outcomes: np.ndarray
    counts: np.ndarray

    @property
    def total(self) -> float:
        return float(self.counts.sum())

    def subset(self, keep: np.ndarray) -> Cells:
        """The cells between the models where ``keep`` (a bool mask over models) is
        true, with the models re-indexed in their original order."""
        new = np.cumsum(keep) - 1
        live = keep[self.pairs[:, 0]] & keep[self.pairs[:, 1]]
        models = [m for m, k in zip(self.models, keep) if k]
        return Cells(models, new[self.pairs[live]], self.outcomes[live], self.counts[live])

    def merged(self) -> Cells:
        """The same likelihood on fewer cells: each unordered pair once (lower index as
        side A, its score as the outcome), so (i, j, 1) and (j, i, 0) become one cell.
        A resample of battles is a multinomial draw over these too (merging cells of a
        multinomial gives a multinomial), and BT sees nothing else."""
        m = len(self.models)
        i, j = self.pairs[:, 0], self.pairs[:, 1]
        swap = i > j
        lo, hi = np.where(swap, j, i), np.where(swap, i, j)
        score = np.where(swap, 1.0 - self.outcomes, self.outcomes)
        key = (lo.astype(np.int64) * m + hi) * 3 + np.rint(score * 2).astype(np.int64)
        cells, inverse = np.unique(key, return_inverse=True)
        counts = np.bincount(inverse.reshape(-1), self.counts, minlength=len(cells))
        pair, outcome = np.divmod(cells, 3)
        return Cells(self.models, np.stack(np.divmod(pair, m), axis=1), outcome / 2.0, counts)

    def with_counts(self, counts: np.ndarray) -> Cells:
        """These cells with other counts, dropping empty cells and models left without
        a battle (the models that would be missing from a resample)."""
        live = counts > 0
        m = len(self.models)
        seen = np.zeros(m, dtype=bool)
        seen[self.pairs[live, 0]] = True
        seen[self.pairs[live, 1]] = True
        sub = Cells(self.models, self.pairs[live], self.outcomes[live], counts[live].astype(np.float64))
        return sub if seen.all() else sub.subset(seen)


def aggregate(table: BattleTable, weights: Sequence[float] | None = None) -> Cells:
    """Collapse a table's battles into cells; ``weights`` (one per battle) sums weights
    instead of counting.  Raises ``ValueError`` on an empty table or bad weights."""
    n = len(table)
    if n == 0:
        raise ValueError("no battles to rate")
    m = len(table.models)
    wt = None
    if weights is not None:
        wt = np.asarray(weights, dtype=np.float64)
        if wt.shape != (n,) or not np.all(np.isfinite(wt)) or np.any(wt < 0):
            raise ValueError("weights must be one finite, non-negative number per battle")

    def keys(lo: int, hi: int) -> np.ndarray:
        return (table.a[lo:hi].astype(np.int64) * m + table.b[lo:hi]) * 3 + _OUTCOME_INDEX[table.winner[lo:hi]]

    size = m * m * 3
    if size <= max(4 * n, 1 << 20):               # dense keys: bincount, a slice at a time
        occupied = np.zeros(size, dtype=np.int64)
        summed = None if wt is None else np.zeros(size)
        for lo in range(0, n, _SLICE):
            key = keys(lo, lo + _SLICE)
            occupied += np.bincount(key, minlength=size)
            if summed is not None:
                summed += np.bincount(key, wt[lo:lo + _SLICE], minlength=size)
        cells = np.flatnonzero(occupied)
        counts = occupied[cells] if summed is None else summed[cells]
    else:                                          # many models, few battles: sort instead
        cells, inverse = np.unique(keys(0, n), return_inverse=True)
        counts = np.bincount(inverse.reshape(-1), wt, minlength=len(cells))
    pair, outcome = np.divmod(cells, 3)
    pairs = np.stack(np.divmod(pair, m), axis=1)
    return Cells(list(table.models), pairs, outcome.astype(np.float64) / 2.0, counts.astype(np.float64))


def win_graph_components(cells: Cells) -> tuple[int, np.ndarray]:
    """Strongly connected components of the graph "i took at least half a point off j".

    The Bradley–Terry MLE is finite (and unique up to a shift) iff this graph is
    strongly connected (Ford 1957; Hunter 2004).  Returns ``(n_components, labels)``.
    """
    m = len(cells.models)
    live = cells.counts > 0
    fwd = live & (cells.outcomes > 0)    # A took at least half a point off B
    bwd = live & (cells.outcomes < 1)
    src = np.concatenate([cells.pairs[fwd, 0], cells.pairs[bwd, 1]])
    dst = np.concatenate([cells.pairs[fwd, 1], cells.pairs[bwd, 0]])
    graph = coo_matrix((np.ones(len(src)), (src, dst)), shape=(m, m))
    return connected_components(graph, directed=True, connection="strong")
