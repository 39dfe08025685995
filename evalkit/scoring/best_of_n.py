"""Best-of-N figures from the same N samples per problem (no resampling per N).

Per problem we have, for each of its N completions in sampling order: whether the task's verifier
judges it correct, the answer it votes for (None: no usable answer, or a task without voting such
as code) and the reward model's reward. For every N' in 1, 2, 4, ... up to N (and N itself), on
the first N' completions:

* ``pass@1``: the mean correctness of the N' completions;
* ``maj@N'``: the answer most of them give is correct (ties: the answer given first; no answer: wrong);
* ``oracle@N'`` (pass@N'): at least one of them is correct;
* ``rm_best_of@N'``: the completion with the highest reward is correct (ties: the first of them).

Each is a mean over problems with its 95% interval (``evalkit.scoring.stats.mean_metric``). ``rm_auroc``
is the reward model's AUROC for telling correct from wrong completions (all N of every problem,
ties count one half), with a bootstrap interval that resamples problems.
"""
from __future__ import annotations

from collections import Counter
from typing import Optional, Sequence

from evalkit.scoring.stats import bootstrap_corpus, derive_seed, mean_metric


def ns_up_to(n: int) -> list[int]:
    out, k = [], 1
    while k < n:
        out.append(k)
        k *= 2
    return out + [n]


def majority_correct(correct: Sequence[float], votes: Sequence[Optional[str]]) -> float:
    counts = Counter(v for v in votes if v is not None)
    if not counts:
        return 0.0
    best = max(counts.values())
    winner = next(v for v in votes if v is not None and counts[v] == best)  # ties: first given
    return float(correct[list(votes).index(winner)])


def best_of(correct: Sequence[float], rewards: Sequence[float]) -> float:
    top = max(rewards)
    return float(correct[list(rewards).index(top)])


def auroc(pairs: Sequence[tuple[float, float]]) -> float:
    """AUROC of scores for labels (1 correct, 0 wrong): P(score of a correct > a wrong), ties 1/2."""
    import numpy as np
    from scipy.stats import rankdata
    if not pairs:
        return float("nan")
    labels = np.array([p[1] for p in pairs], dtype=float) >= 0.5
    pos, neg = int(labels.sum()), int((~labels).sum())
    if not pos or not neg:
        return float("nan")
    ranks = rankdata([p[0] for p in pairs])
    return float((ranks[labels].sum() - pos * (pos + 1) / 2) / (pos * neg))


def compute(problems: Sequence[dict], seed: int = 1234, task: str = "") -> dict:
    """``problems``: ``{"correct": [0/1 per completion], "votes": [answer or None], "rewards": [float]}``.
    Returns ``{"n_samples", "ns", "metrics": {name: MetricValue dict}, "curves": {figure: [values by N]},
    "curves_ci": {figure: [[ci_low, ci_high] by N]}}`` (the curves' 95% intervals, for the leaderboard's bands)."""
    if not problems:
        return {"n_samples": 0, "ns": [], "metrics": {}, "curves": {}, "curves_ci": {}}
    n = min(len(p["correct"]) for p in problems)
    ns = ns_up_to(n)
    voting = any(v is not None for p in problems for v in p["votes"])
    metrics, curves = {}, {"pass@1": [], "maj": [], "oracle": [], "rm_best_of": []}
    bands: dict = {name: [] for name in curves}
    for k in ns:
        per = {
            "pass@1": [sum(p["correct"][:k]) / k for p in problems],
            "maj": [majority_correct(p["correct"][:k], p["votes"][:k]) for p in problems] if voting else None,
            "oracle": [float(any(c >= 1 for c in p["correct"][:k])) for p in problems],
            "rm_best_of": [best_of(p["correct"][:k], p["rewards"][:k]) for p in problems],
        }
        for name, values in per.items():
            if values is None:
                curves[name].append(None)
                bands[name].append(None)
                continue
            label = "pass@1" if name == "pass@1" else f"{name}@{k}"
            mv = mean_metric(values)
            curves[name].append(mv.value)
            bands[name].append([mv.ci_low, mv.ci_high])
            if name != "pass@1" or k == n:
                metrics[label if name != "pass@1" else "pass@1"] = mv.to_dict()
    if not voting:
        curves.pop("maj")
        bands.pop("maj")
    flat = [[(r, c) for r, c in zip(p["rewards"][:n], p["correct"][:n])] for p in problems]
    au = bootstrap_corpus(flat, lambda items: auroc([x for it in items for x in it]),
                          seed=derive_seed(seed, task, "rm_auroc"), replicates=500)
    metrics["rm_auroc"] = au.to_dict()
    return {"n_samples": n, "ns": ns, "metrics": metrics, "curves": curves, "curves_ci": bands}


#: the figures at full N that also go into the task's metrics (compare, gate and the leaderboard see them)
HEADLINE = ("maj@{n}", "oracle@{n}", "rm_best_of@{n}", "rm_auroc", "pass@1")


def attach(entry, rows: list[dict], problems: Sequence[dict], seed: int, task: str, **info) -> dict:
    """Best-of-N figures of one task into its record entry (``entry.best_of_n`` and the headline
    metrics) and each problem into its sample row (``row["best_of_n"]``); returns the figures."""
    for row, p in zip(rows, problems):
        row["best_of_n"] = p
    res = compute(problems, seed, task)
    res.update(info)
    entry.best_of_n = res
    for label in (h.format(n=res["n_samples"]) for h in HEADLINE):
        if label in res["metrics"] and label not in entry.metrics:
            entry.metrics[label] = res["metrics"][label]
    return res
