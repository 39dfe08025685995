"""The answer a completion votes for in a majority vote (maj@K over repeats, maj@N in best-of-N),
by the kind of answer a task extracts: ``number`` (GSM8K's strict, else flexible match, as a
number), ``math`` (the extracted final answer without spaces), ``letter`` (a multiple-choice
letter). Code gets no vote: programs are not compared by text."""
from __future__ import annotations

import re
from typing import Optional

KINDS = ("number", "math", "letter")


def _number_key(text: str) -> Optional[str]:
    t = re.sub(r"[,$\s]", "", str(text)).rstrip(".")
    try:
        x = float(t)
    except ValueError:
        return t or None
    return str(int(x)) if x.is_integer() else repr(x)


def vote_of(kind: str, extracted) -> Optional[str]:
    """The answer a completion votes for in maj@N (None: no usable answer, or no voting for ``kind``)."""
    if kind == "number" and isinstance(extracted, dict):
        pred = extracted.get("strict")
        if pred in (None, "[invalid]"):
            pred = extracted.get("flexible")
        return None if pred in (None, "[invalid]") else _number_key(pred)
    if kind == "math" and isinstance(extracted, dict):
        a = extracted.get("answer")
        return None if a is None else re.sub(r"\s+", "", str(a))
    if kind == "letter":
        first = extracted[0] if isinstance(extracted, list) and extracted else extracted
        return first.get("letter") if isinstance(first, dict) else None
    return None  # code: no majority vote over programs
