"""How far to trust a judge: the figures every judged run record carries.

* parse failures: judgments with no verdict in the judge's text after all retries (and how many
  of those the constrained verdict resolved, how many stayed unresolved);
* position-swap disagreement (pairwise): each pair is judged in both orders; the share of pairs
  whose two verdicts, mapped back to the models, differ (those count as ties, as in FastChat), and
  how often the first position wins a decisive verdict (0.5 = no position bias);
* length: the Spearman correlation of the score with the answer's length in characters (single),
  of the outcome with the length difference (pairwise), and how often the longer answer wins.
A correlation needs three points and some spread; otherwise it is ``None``.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Optional, Sequence

import numpy as np


def _corr(x: Sequence[float], y: Sequence[float], kind: str = "spearman") -> Optional[float]:
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    from scipy import stats
    r = (stats.spearmanr(x, y) if kind == "spearman" else stats.pearsonr(x, y))[0]
    return None if not math.isfinite(r) else round(float(r), 4)


def _rate(k: int, n: int) -> Optional[float]:
    return round(k / n, 4) if n else None


def parse_figures(judgments: Sequence) -> dict:
    n = len(judgments)
    src = Counter(j.source for j in judgments)
    failed = src["constrained"] + src["failed"]
    return {"n_judgments": n, "parsed_first_try": src["parsed"], "parsed_on_retry": src["retry"],
            "parse_failures": failed, "parse_failure_rate": _rate(failed, n),
            "first_try_failure_rate": _rate(n - src["parsed"], n),
            "constrained": src["constrained"], "unresolved": src["failed"],
            "unresolved_rate": _rate(src["failed"], n)}


def single_figures(judgments: Sequence, lengths: Sequence[int]) -> dict:
    """``lengths[i]``: characters of the answer ``judgments[i]`` graded."""
    out = parse_figures(judgments)
    pts = [(float(j.value), n) for j, n in zip(judgments, lengths) if j.value is not None]
    out.update({"n_scored": len(pts),
                "length_spearman": _corr([p[0] for p in pts], [p[1] for p in pts]),
                "length_pearson": _corr([p[0] for p in pts], [p[1] for p in pts], "pearson")})
    return out


A_MAP = {"A": "model_1", "B": "model_2", "C": "tie"}   # first order: model_1 is assistant A
B_MAP = {"A": "model_2", "B": "model_1", "C": "tie"}   # swapped order: model_2 is assistant A


def combine_orders(v1, v2) -> Optional[str]:
    """Both orders' verdicts -> "model_1", "model_2" or "tie" (disagreement is a tie); None if either
    order is unresolved."""
    if v1 is None or v2 is None:
        return None
    g1, g2 = A_MAP[v1], B_MAP[v2]
    return g1 if g1 == g2 else "tie"


def pairwise_figures(pairs: Sequence) -> dict:
    """``pairs``: objects with ``g1``/``g2`` (Judgment, first and swapped order), ``len_1``/``len_2``
    (answer lengths of model_1 and model_2) and ``winner`` (``combine_orders``)."""
    out = parse_figures([j for p in pairs for j in (p.g1, p.g2)])
    both = [p for p in pairs if p.g1.value is not None and p.g2.value is not None]
    disagree = sum(A_MAP[p.g1.value] != B_MAP[p.g2.value] for p in both)
    decisive = [v for p in both for v in (p.g1.value, p.g2.value) if v in ("A", "B")]
    outcome = {"model_1": 1.0, "model_2": 0.0, "tie": 0.5}
    resolved = [p for p in pairs if p.winner is not None]
    uneven = [p for p in resolved if p.winner != "tie" and p.len_1 != p.len_2]
    longer_won = sum((p.winner == "model_1") == (p.len_1 > p.len_2) for p in uneven)
    out.update({
        "n_pairs": len(pairs), "n_pairs_both_orders": len(both),
        "swap_disagreements": disagree, "swap_disagreement_rate": _rate(disagree, len(both)),
        "first_position_win_rate": _rate(decisive.count("A"), len(decisive)),
        "unresolved_pairs": len(pairs) - len(resolved),
        "outcomes": dict(Counter(p.winner for p in resolved)),
        "longer_answer_win_rate": _rate(longer_won, len(uneven)), "n_decisive_uneven_length": len(uneven),
        "length_diff_spearman": _corr([outcome[p.winner] for p in resolved], [p.len_1 - p.len_2 for p in resolved]),
    })
    return out
