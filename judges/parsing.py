"""Reading the judge's verdict out of its text: a 1-10 rating or a pairwise [[A]]/[[B]]/[[C]].

FastChat takes the *first* ``[[n]]`` (``re.search``) and tests ``"[[A]]" in text`` before
``"[[B]]"``, so a judge that mentions ``[[A]]`` while reasoning and ends with ``[[B]]`` is read as
A (FastChat PR #3921). Here the *final* verdict counts:

* ratings: the last ``[[n]]`` (``n`` may be a decimal or ``n/10``); failing that, FastChat's
  fallback, the last ``[n]``. A rating outside 1-10 is a parse failure, not a score.
* verdicts: the last ``[[A]]``/``[[B]]``/``[[C]]``, preferring one written after the word
  "verdict". Tokens that merely echo the instructions (``"[[A]]" if assistant A is better``,
  ``"[[C]]" for a tie``, ``for example: "Rating: [[5]]"``) are ignored; two different verdicts on
  the final verdict's line (``[[A]] and [[B]] are equally good``) are ambiguous, a failure.

Every function returns ``Parsed(value, error)``: exactly one of them is set, so callers count
failures instead of dropping them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Union

RATING = re.compile(r"\[\[\s*(\d+(?:\.\d+)?)\s*(?:/\s*10\s*)?\]\]")
RATING_BACKUP = re.compile(r"\[\s*(\d+(?:\.\d+)?)\s*(?:/\s*10\s*)?\]")
VERDICT = re.compile(r"\[\[\s*([ABC])\s*\]\]")
VERDICTS = ("A", "B", "C")

_ECHO_AFTER = re.compile(r"""\s*["'”]?\s*(?:if\s+(?:the\s+)?assistant|for\s+a\s+tie)""", re.I)
_ECHO_BEFORE = re.compile(r"""(?:for\s+example|e\.g\.)\s*[:,]?\s*["'“]?\s*(?:rating\s*:?\s*)?$""", re.I)
_VERDICT_WORD = re.compile(r"verdict[^\n\[]{0,40}$", re.I)


@dataclass(frozen=True)
class Parsed:
    value: Optional[Union[float, str]]
    error: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.value is not None


def _echo(text: str, m: re.Match) -> bool:
    return bool(_ECHO_AFTER.match(text, m.end()) or _ECHO_BEFORE.search(text[max(0, m.start() - 40):m.start()]))


def parse_rating(text: Optional[str], low: float = 1.0, high: float = 10.0) -> Parsed:
    """The judge's final ``[[rating]]`` (FastChat's ``[rating]`` as the fallback), within [low, high]."""
    if not text or not text.strip():
        return Parsed(None, "empty judgment")
    for pattern in (RATING, RATING_BACKUP):
        found = list(pattern.finditer(text))
        hits = [m for m in found if not _echo(text, m)]
        if hits:
            value = float(hits[-1].group(1))
            if not low <= value <= high:
                return Parsed(None, f"rating {hits[-1].group(0)} outside {low:g}-{high:g}")
            return Parsed(value)
        for m in found:  # an echoed "[[5]]" must not come back as the fallback's "[5]"
            text = text[:m.start()] + " " * (m.end() - m.start()) + text[m.end():]
    return Parsed(None, "no [[rating]] found")


def parse_verdict(text: Optional[str]) -> Parsed:
    """The judge's final pairwise verdict: "A", "B" or "C" (tie)."""
    if not text or not text.strip():
        return Parsed(None, "empty judgment")
    hits = [m for m in VERDICT.finditer(text) if not _echo(text, m)]
    if not hits:
        return Parsed(None, "no [[A]]/[[B]]/[[C]] verdict found")
    marked = [m for m in hits if _VERDICT_WORD.search(text[max(0, m.start() - 60):m.start()])]
    if marked:
        return Parsed(marked[-1].group(1))
    last = hits[-1]
    line_start = text.rfind("\n", 0, last.start()) + 1
    line_end = text.find("\n", last.end())
    line_end = len(text) if line_end < 0 else line_end
    on_line = {m.group(1) for m in hits if line_start <= m.start() < line_end}
    if len(on_line) > 1:
        return Parsed(None, f"ambiguous verdict line: {text[line_start:line_end].strip()[:120]!r}")
    return Parsed(last.group(1))


def parse(output_format: str, text: Optional[str]) -> Parsed:
    if output_format == "[[rating]]":
        return parse_rating(text)
    if output_format == "[[A]]":
        return parse_verdict(text)
    raise ValueError(f"unsupported judge output format {output_format!r}")
