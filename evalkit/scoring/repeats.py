"""Metrics of K samples per problem (``--repeats K``, or ``--gen-kwargs n=K``): avg@K, pass@k, pass^k, maj@K.

For one problem with K sampled completions of which c are right:

- ``avg@K`` = c / K, the mean accuracy of a single sample (model cards' "avg@16"; equals pass@1);
- ``pass@k`` = 1 - C(K-c, k) / C(K, k): the chance that at least one of k samples drawn without
  replacement is right (Chen et al. 2021, unbiased; ``evalkit.scoring.passk``, shared with the code tasks);
- ``pass^k`` = C(c, k) / C(K, k): the chance that all k drawn samples are right (τ-bench, Yao et al.
  2024, its unbiased estimator);
- ``maj@K``: whether the most frequent extracted answer of the K samples is right. Samples without
  an answer (``None`` or "") do not vote; ties go to the answer that appeared first in sample order
  (sample indices are fixed by the seeds, so the tie-break is deterministic); no answer at all is wrong.

ks reported: 1, 2, 4, ... up to K, and K itself (``repeat_ks``).

The run's figure is the mean of the per-problem values over problems, and its 95% interval is
taken over problems (``evalkit.scoring.stats.mean_metric`` on one value per problem): the K samples
of a problem are not K independent items. That is Miller (2024), "Adding Error Bars to Evals",
§2.3: compute each problem's mean, then the standard error over problems. With equal K per problem
the cluster-robust standard error of the mean over all n·K samples equals this one times
sqrt((n-1)/n) (``clustered_se``, for reference); ``naive_se`` treats the n·K samples as independent,
which understates the error when problems differ in difficulty (``design_effect`` = their ratio²).

Repeats have three homes, one per layer: ``evalkit.scoring.repeats`` (the maths: avg@K, pass@k,
pass^k, maj@K and their standard errors), ``evalkit.taskapi.repeats`` (a task's K completions scored
and its repeat metrics declared) and ``evalkit.run.repeats_split`` (the K requests the engine sends).
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Any, Optional, Sequence

from evalkit.scoring.passk import pass_at_k

#: metric-name prefixes this module produces (checked to declare them for a task)
PREFIXES = ("avg@", "pass@", "pass^", "maj@")


def repeat_ks(k_max: int) -> tuple[int, ...]:
    """1, 2, 4, ... below ``k_max``, and ``k_max``."""
    if k_max < 1:
        raise ValueError(f"repeats: K must be >= 1, got {k_max}")
    ks, k = [], 1
    while k < k_max:
        ks.append(k)
        k *= 2
    return tuple(ks + [k_max])


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k of one problem: C(c, k) / C(n, k), every one of k samples drawn from n right (τ-bench)."""
    n, c, k = int(n), int(c), int(k)
    if not 0 <= c <= n:
        raise ValueError(f"pass^k needs 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"pass^{k} needs 1 <= k <= n samples, got n={n}")
    return math.comb(c, k) / math.comb(n, k)


def _vote_key(answer: Any) -> Optional[str]:
    if answer is None:
        return None
    key = answer.strip() if isinstance(answer, str) else repr(answer)
    return key or None


def majority(answers: Sequence[Any]) -> Optional[int]:
    """Index of the first sample carrying the most frequent answer (ties: the answer seen first);
    None when no sample has an answer."""
    keys = [_vote_key(a) for a in answers]
    counts = Counter(k for k in keys if k is not None)  # insertion order = first appearance
    if not counts:
        return None
    best = max(counts.values())
    winner = next(k for k in counts if counts[k] == best)
    return keys.index(winner)


def problem_metrics(correct: Sequence[bool], answers: Optional[Sequence[Any]] = None,
                    ks: Optional[Sequence[int]] = None) -> dict[str, float]:
    """Every repeat metric of one problem from its samples' verdicts (and extracted answers for maj@K)."""
    n = len(correct)
    if n == 0:
        raise ValueError("repeats: a problem has no samples")
    c = sum(bool(x) for x in correct)
    out = {f"avg@{n}": c / n}
    ks = [k for k in (ks or repeat_ks(n)) if k <= n]
    out.update({f"pass@{k}": pass_at_k(n, c, k) for k in ks})
    out.update({f"pass^{k}": pass_hat_k(n, c, k) for k in ks})
    if answers is not None:
        if len(answers) != n:
            raise ValueError(f"repeats: {len(answers)} answers for {n} samples")
        i = majority(answers)
        out[f"maj@{n}"] = float(bool(correct[i])) if i is not None else 0.0
    return out


def is_repeat_metric(name: str) -> bool:
    if not name.startswith(PREFIXES):
        return False
    tail = name.split("@", 1)[1] if "@" in name else name.split("^", 1)[1]
    return tail.isdigit()


def naive_se(correct_per_problem: Sequence[Sequence[bool]]) -> float:
    """Standard error of the mean over all samples as if they were independent (for reference only)."""
    xs = [float(bool(x)) for p in correct_per_problem for x in p]
    m = len(xs)
    if m < 2:
        return float("nan")
    mean = sum(xs) / m
    return math.sqrt(sum((x - mean) ** 2 for x in xs) / (m - 1) / m)


def clustered_se(correct_per_problem: Sequence[Sequence[bool]]) -> float:
    """Cluster-robust standard error of the mean over all samples, clusters = problems (Miller 2024,
    eq. 4): sqrt(sum_c (sum_i (x_ci - mean))^2) / (number of samples)."""
    xs = [[float(bool(x)) for x in p] for p in correct_per_problem if len(p)]
    total = sum(len(p) for p in xs)
    if len(xs) < 2:
        return float("nan")
    mean = sum(map(sum, xs)) / total
    return math.sqrt(sum(sum(x - mean for x in p) ** 2 for p in xs)) / total


def summary(correct_per_problem: Sequence[Sequence[bool]]) -> dict:
    """Run-level figures of the repeats (record ``extra.repeats``): K, problems, samples, and the
    naive vs clustered standard error of avg@K with their design effect."""
    ns = [len(p) for p in correct_per_problem]
    naive, clus = naive_se(correct_per_problem), clustered_se(correct_per_problem)
    deff = (clus / naive) ** 2 if naive and naive == naive and naive > 0 and clus == clus else None
    return {"k": max(ns, default=0), "k_min": min(ns, default=0), "problems": len(ns), "samples": sum(ns),
            "n_correct": sum(sum(bool(x) for x in p) for p in correct_per_problem),
            "se_naive": naive, "se_clustered": clus, "design_effect": deff}
