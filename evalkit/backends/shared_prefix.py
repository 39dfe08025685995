"""Find sequences (token lists or strings) that start with the same long prefix.

Five-shot prompts repeat the same examples in front of every question of a subject: MMLU's
prompts share ~500-900 leading tokens and differ in the last ~100. A backend that keeps the
model's key/value cache of the shared prefix only has to run the differing suffixes, which
removes most of the work without changing what the model computes for any position; the engine
uses the same grouping to keep such requests next to each other when it cuts them into chunks.
"""
from __future__ import annotations

from typing import Sequence


def common_prefix_len(a: Sequence, b: Sequence) -> int:
    """Length of the common prefix, by binary search over slice comparisons (done in C)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def prefix_runs(seqs: Sequence[Sequence], limits: Sequence[int], min_prefix: int) -> list[tuple[list[int], list[int]]]:
    """Maximal runs of lexicographic neighbours that share at least ``min_prefix`` elements, as
    ``(indices, shared)`` where ``shared[k]`` is the prefix (capped by ``limits``) that indices k
    and k+1 share; a sequence without such a neighbour is a run of one."""
    order = sorted(range(len(seqs)), key=lambda i: seqs[i])
    shared = [min(common_prefix_len(seqs[a], seqs[b]), limits[a], limits[b]) for a, b in zip(order, order[1:])]
    runs, start = [], 0
    for k in range(len(order)):
        if k == len(shared) or shared[k] < min_prefix:  # a run ends at order[k]
            runs.append((order[start:k + 1], shared[start:k]))
            start = k + 1
    return runs


def shared_prefix_groups(seqs: Sequence[Sequence], limits: Sequence[int],
                         min_prefix: int = 32) -> tuple[list[tuple[int, list[int]]], list[int]]:
    """Split ``seqs`` into groups of two or more sequences that share a prefix of at least
    ``min_prefix`` elements, and the rest.

    ``limits[i]`` caps how much of sequence i may go into a prefix (a backend must compute the
    positions whose outputs it reads with the suffix). Returns ``([(prefix_len, [indices]), ...],
    [other indices])``. A run of neighbours (``prefix_runs``) is one group, or is split where the
    shared prefix is shortest when that saves more (``(members - 1) * prefix`` elements not
    recomputed), so one outlier cannot shrink the prefix of a whole group.
    """
    groups: list[tuple[int, list[int]]] = []
    rest: list[int] = []
    for members, shared in prefix_runs(seqs, limits, min_prefix):
        if len(members) == 1:
            rest.extend(members)
            continue
        _, run_groups, singles = _best_split(members, shared, depth=0)
        groups.extend(run_groups)
        rest.extend(singles)
    return groups, rest


def _best_split(members: list[int], shared: list[int], depth: int):
    """(elements saved, groups, members left alone) for a run of >= 2 neighbours, where
    ``shared[k]`` is the prefix members k and k+1 share."""
    prefix = min(shared)
    whole = (len(members) - 1) * prefix
    if prefix == max(shared) or depth > 64:
        return whole, [(prefix, members)], []
    saved, groups, singles, start = 0, [], [], 0
    for k in range(len(shared) + 1):
        if k == len(shared) or shared[k] == prefix:
            if k > start:
                s, g, one = _best_split(members[start:k + 1], shared[start:k], depth + 1)
                saved, groups, singles = saved + s, groups + g, singles + one
            else:
                singles.append(members[k])
            start = k + 1
    return (saved, groups, singles) if saved > whole else (whole, [(prefix, members)], [])
