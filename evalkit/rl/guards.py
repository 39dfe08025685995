r"""What a reward refuses that an evaluation metric would let through, and thinking-trace stripping.

An evaluation scores what a model wrote once; a trainer optimises against the checker, so
degenerate answers it would learn to game earn nothing here (``guards=True``, the default):

- ``too long``: more than ``max_chars`` characters (default 100,000): a million-character answer
  full of numbers otherwise hits the gold by chance (GSM8K's flexible match takes the last number);
- ``several final answers``: GSM8K's ``#### N`` (or gsm8k_cot's "The answer is N") more than once,
  MATH's ``\boxed{}`` with more than ``max_boxed`` different contents (default 3: some MATH
  reference solutions box two parts), MMLU/GPQA "Answer: X" naming more than one letter.

The guards never change a verdict from 0 to 1; ``guards=False`` gives the evaluation metric exactly.
``strip_think``: the answer as the evaluation scores it (``evalkit.scoring.thinking.separate``, one splitter
for both): everything up to the last ``</think>`` is the trace (also when the template opened it in
the prompt), and a trace that never closes leaves no answer at all. An answer given only inside
the trace scores 0, so the reward a trainer sees is the metric the evaluation reports.
"""
from __future__ import annotations

import re
from typing import Optional

from evalkit.scoring.choices import _ANSWER
from evalkit.scoring.math_equivalence import last_boxed_only_string

DEFAULT_MAX_CHARS = 100_000
DEFAULT_MAX_BOXED = 3
_STRICT = {"gsm8k": re.compile(r"#### (\-?[0-9\.\,]+)"), "gsm8k_cot": re.compile(r"The answer is (\-?[0-9\.\,]+).")}


def strip_think(text: str, open_tag: str = "<think>", close_tag: str = "</think>") -> str:
    from evalkit.scoring.thinking import ThinkingConfig, separate
    return separate(text, ThinkingConfig(start=open_tag, end=close_tag)).answer


def boxed_contents(text: str, limit: int = 64) -> list[str]:
    found, rest = [], text
    while len(found) < limit:
        b = last_boxed_only_string(rest)
        if b is None:
            break
        found.append(b)
        i = rest.rfind(b)
        if i < 0:
            break
        rest = rest[:i]
    return found


def refusal(task_name: str, kind: str, text: str, max_chars: int, max_boxed: int) -> Optional[str]:
    """Why a completion earns nothing whatever the metric says, or None."""
    if len(text) > max_chars:
        return f"too long ({len(text):,} characters > {max_chars:,})"
    if kind == "number":
        n = len(_STRICT[task_name].findall(text))
        if n > 1:
            return f"several final answers ({n} matches of the answer pattern)"
    elif kind == "math":
        distinct = set(boxed_contents(text, max_boxed + 2))
        if len(distinct) > max_boxed:
            return f"several final answers (more than {max_boxed} different \\boxed{{}})"
    elif kind == "letter":
        letters = {m.group(1) for m in _ANSWER.finditer(text)}
        if len(letters) > 1:
            return f"several final answers (letters {''.join(sorted(letters))})"
    return None
