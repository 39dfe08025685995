"""Shared helpers for multiple-choice benchmarks (MMLU, GPQA, ...).

- ``extract_answer_letter``: the "Answer: X" letter of a chain-of-thought completion. The *last*
  match counts (models restate the question's format before answering); when the first and the
  last match differ the item is flagged, since the model changed its mind or echoed the format.
- ``permutation``: a seeded shuffle of the choices that depends only on the run seed and the
  question id (never on global random state), so a run is reproducible item by item, whatever
  subset or order of items is evaluated.
- ``simple_evals_prompt``: the zero-shot chain-of-thought prompt of openai/simple-evals.
- ``macro_mean``: the mean over groups (subjects) of per-group means, with an analytic CI.
"""
from __future__ import annotations

import math
import random
import re
import statistics
from dataclasses import dataclass
from typing import Optional, Sequence

from evalkit.scoring.stats import Z95, MetricValue, derive_seed

LETTERS = "ABCDEFGHIJ"

# "Answer: B", "answer:(B)", "**Answer:** $B$", "Answer: \boxed{B}", "ANSWER : [B]" -- the word is
# matched without case, the letter must be a capital and must stand alone ("Answer: Because" is
# no answer).
_ANSWER = re.compile(
    r"(?i:answer)[ \t]*(?:\*\*|__)?[ \t]*(?:is)?[ \t]*:[ \t]*(?:\*\*|__)?[ \t]*"
    r"[\$\(\[\{]*[ \t]*(?:\\(?:boxed|text|textbf|mathrm)\{)?[ \t]*([A-Z])(?![A-Za-z0-9])")

SIMPLE_EVALS_TEMPLATE = (
    "Answer the following multiple choice question. The last line of your response should be of the following "
    "format: 'Answer: $LETTER' (without quotes) where LETTER is one of {letters}. Think step by step before "
    "answering.\n\n{question}\n\n{options}")


@dataclass(frozen=True)
class LetterAnswer:
    letter: Optional[str]   # the last valid match, None when there is none
    first: Optional[str]    # the first valid match
    n_matches: int

    @property
    def first_last_differ(self) -> bool:
        return self.first is not None and self.first != self.letter

    def to_dict(self) -> dict:
        return {"letter": self.letter, "first": self.first, "n_matches": self.n_matches,
                "first_last_differ": self.first_last_differ}


def extract_answer_letter(text: str, letters: str = "ABCD") -> LetterAnswer:
    """The last "Answer: X" with X in ``letters`` (first match and match count alongside)."""
    found = [m.group(1) for m in _ANSWER.finditer(text or "") if m.group(1) in letters]
    if not found:
        return LetterAnswer(None, None, 0)
    return LetterAnswer(found[-1], found[0], len(found))


def permutation(n: int, *seed_parts) -> list[int]:
    """A permutation of range(n) drawn from a private RNG seeded by ``derive_seed(*seed_parts)``.

    ``shown[i] = original[perm[i]]``: position i of the prompt shows original choice perm[i].
    """
    perm = list(range(n))
    random.Random(derive_seed(*seed_parts)).shuffle(perm)
    return perm


def simple_evals_prompt(question: str, choices: Sequence[str]) -> str:
    letters = LETTERS[: len(choices)]
    options = "\n".join(f"{letters[i]}) {c}" for i, c in enumerate(choices))
    return SIMPLE_EVALS_TEMPLATE.format(letters=letters, question=question, options=options)


def macro_mean(groups: dict[str, Sequence[float]], higher_is_better: bool = True) -> MetricValue:
    """Unweighted mean over groups (subjects) of each group's mean, with a stratified stderr
    sqrt(sum_g var_g) / G (groups are independent samples) and a normal 95% interval, clipped to
    [0, 1] for metrics that live there.

    var_g is the variance of the group mean: for 0/1 metrics Agresti-Coull's p~(1-p~)/(n+4) with
    p~ = (x+2)/(n+4) (never 0 for a group at 0% or 100%, ~p(1-p)/n for large n); otherwise the
    group's sample variance / n (the pooled variance for one-item groups)."""
    data = {g: [float(v) for v in vs if v is not None] for g, vs in groups.items()}
    data = {g: x for g, x in data.items() if x}
    if not data:
        return MetricValue(float("nan"), None, None, None, 0, "macro", higher_is_better)
    everything = [v for x in data.values() for v in x]
    pooled = statistics.variance(everything) if len(everything) > 1 else 0.25
    means, variances = [], []
    for x in data.values():
        n = len(x)
        means.append(sum(x) / n)
        if all(v in (0.0, 1.0) for v in x):
            pt = (sum(x) + 2) / (n + 4)
            variances.append(pt * (1 - pt) / (n + 4))
        else:
            variances.append((statistics.variance(x) if n > 1 else pooled) / n)
    g = len(means)
    value = sum(means) / g
    se = math.sqrt(sum(variances)) / g
    lo, hi = value - Z95 * se, value + Z95 * se
    if all(0.0 <= v <= 1.0 for v in everything):
        lo, hi = max(0.0, lo), min(1.0, hi)
    return MetricValue(value, se, lo, hi, len(everything), "macro", higher_is_better)
