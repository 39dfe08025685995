"""Turning a process reward model's per-step rewards into one score per completion (best-of-N
with ``--reward-args step_agg=...``).

* ``min`` (the default): the weakest step decides, a solution is as good as its worst step
  (Math-Shepherd, Wang et al. 2024; also compared by Lightman et al. 2023). The default because it
  is well defined on raw rewards, evalkit's default activation.
* ``product``: the probability that every step is correct (Lightman et al. 2023, "Let's Verify
  Step by Step"). It multiplies probabilities, so it needs ``activation=sigmoid`` or ``softmax``
  (with raw rewards a product of two negative scores would rank above a positive one).
* ``last``: the last step's reward (the PRM read as an outcome reward model).

A completion with no steps cannot happen here (an empty response is one empty step).
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

STEP_AGGS = ("min", "last", "product")
DEFAULT_STEP_AGG = "min"


def check_step_agg(step_agg: Optional[str], activation: str) -> Optional[str]:
    if step_agg is None:
        return None
    if step_agg not in STEP_AGGS:
        raise ValueError(f"step_agg={step_agg!r}: expected one of {', '.join(STEP_AGGS)}")
    if step_agg == "product" and activation not in ("sigmoid", "softmax"):
        raise ValueError("step_agg=product multiplies step probabilities: add activation=sigmoid (one-label "
                         "head) or activation=softmax (two or more labels); raw rewards are not probabilities")
    return step_agg


def aggregate_steps(values: Sequence[float], how: str = DEFAULT_STEP_AGG) -> float:
    if not values:
        raise ValueError("no step rewards to aggregate")
    if how == "min":
        return float(min(values))
    if how == "last":
        return float(values[-1])
    if how == "product":
        return float(math.prod(values))
    raise ValueError(f"step_agg={how!r}: expected one of {', '.join(STEP_AGGS)}")
