"""Answer extraction and matching shared by generative tasks (GSM8K-style numbers).

lm-eval compares strings after its regex clean-up, so ``1072.00`` != ``1072``; we report its
strict and flexible matches for comparability and a numeric match beside them.
"""
from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Optional, Sequence

INVALID = "[invalid]"
FLEXIBLE_NUMBER = re.compile(r"(-?[$0-9.,]{2,})|(-?[0-9]+)")
LM_EVAL_IGNORE = (",", r"\$", r"(?s).*#### ", r"\.$")


def regex_extract(text: str, pattern: re.Pattern | str, group_select: int = 0) -> str:
    """lm-eval's RegexFilter + take_first: the selected match (first non-empty group), or [invalid]."""
    rx = re.compile(pattern) if isinstance(pattern, str) else pattern
    found = rx.findall(text)
    if not found:
        return INVALID
    m = found[group_select]
    if isinstance(m, tuple):
        m = next((g for g in m if g), None)
        if m is None:
            return INVALID
    return m.strip()


def lm_eval_exact_match(pred: str, ref: str, ignore: Sequence[str] = LM_EVAL_IGNORE, ignore_case=True) -> float:
    for rx in ignore:
        pred = re.sub(rx, "", pred)
        ref = re.sub(rx, "", ref)
    if ignore_case:
        pred, ref = pred.lower(), ref.lower()
    return float(pred == ref)


def parse_number(text: Optional[str]) -> Optional[Decimal]:
    """'$1,072.00' -> Decimal('1072.00'); None when the text holds no number."""
    if text is None:
        return None
    t = text.strip().replace(",", "").replace("$", "").rstrip(".")
    m = re.search(r"-?\d+(?:\.\d+)?(?:/\d+)?", t)
    if not m:
        return None
    s = m.group(0)
    try:
        if "/" in s:
            a, b = s.split("/")
            return Decimal(a) / Decimal(b) if Decimal(b) != 0 else None
        return Decimal(s)
    except InvalidOperation:
        return None


def numbers_equal(a: Optional[str], b: Optional[str]) -> float:
    x, y = parse_number(a), parse_number(b)
    return float(x is not None and y is not None and x == y)
