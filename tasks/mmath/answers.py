r"""MMATH's answer extraction and check, as the reference (``nvidia-mmath``'s ``mmath/utils.py`` and
``mmath_eval.py``, from RUCAIBox/MMATH, MIT) does them.

Extraction (``math_postprocess_v2``, ported step for step, quirks kept):

1. the last ``\boxed`` (else ``\fbox``) with balanced braces, read only when it is written
   ``\boxed{...}`` (a ``\fbox{}`` or ``\boxed 5`` falls through), one outer ``{...}`` pair stripped
   (on one line only); an empty box falls through too;
2. else: the text after the last of "final answer", "answer is", "answer:", "answer is:", "final
   answer:", "final answer is" -- looked for in the lower-cased text but cut from the text as
   written, so "Final Answer:" (capitals) cuts nothing -- and there the last number (``1,000`` ->
   ``1000``, a leading ``+`` and trailing ``.`` dropped); with no number the string ``"None"``.

The check: ``verify(parse(answer), parse("$" + extracted + "$"))`` with math-verify; evalkit runs it
in its math-equivalence workers (``evalkit.scoring.math_equivalence.judge_math_verify``: the same call,
with a wall-clock timeout per item and the gold's parse memoised).
"""
from __future__ import annotations

import re
from typing import Optional

from evalkit.scoring.math_equivalence import JudgeItem

_ANSWER_PREFIXES = ("final answer", "answer is", "answer:", "answer is:", "final answer:", "final answer is")
_LAST_DIGIT = re.compile(r"([+-])?(?=([0-9]|\.[0-9]))(0|([1-9](\d{0,2}(,\d{3})*)|\d*))?(\.\d*)?(?=\D|$)")
_DOUBLE_BRACE = re.compile(r"^\{(.*)\}$")


def last_boxed_only_string(string: str) -> Optional[str]:
    r"""The last ``\boxed`` (or, with none, ``\fbox``) up to the brace that closes its first ``{``."""
    idx = string.rfind("\\boxed")
    if idx < 0:
        idx = string.rfind("\\fbox")
        if idx < 0:
            return None
    depth = 0
    for i in range(idx, len(string)):
        if string[i] == "{":
            depth += 1
        if string[i] == "}":
            depth -= 1
            if depth == 0:
                return string[idx:i + 1]
    return None


def remove_boxed(s: str) -> Optional[str]:
    r"""``\boxed{x}`` -> ``x``; anything else (``\fbox{x}``, ``\boxed 5}``) -> None."""
    left = "\\boxed{"
    if s[:len(left)] == left and s[-1:] == "}":
        return s[len(left):-1]
    return None


def boxed(text: str) -> Optional[str]:
    """The reference's ``extract_boxed_answer(text, strip_double_curly_brace=True)``."""
    found = last_boxed_only_string(text)
    answer = remove_boxed(found) if found is not None else None
    if answer is None:
        return None
    match = _DOUBLE_BRACE.match(answer)
    return match.group(1) if match else answer


def last_number(s: str) -> str:
    """The reference's ``_get_last_digit``: the last number of ``s`` as written (thousands commas and
    a ``+`` removed, outer dots stripped), or the string ``"None"``."""
    found = list(_LAST_DIGIT.finditer(s))
    if not found:
        return "None"
    return found[-1].group().replace(",", "").replace("+", "").strip().strip(".")


def extract(text: str) -> str:
    """The reference's ``math_postprocess_v2``: the boxed answer, else the last number after an
    answer phrase (or of the whole text), else ``"None"``."""
    answer = boxed(text)
    if answer:
        return answer
    lower_text = text.lower()
    for prefix in _ANSWER_PREFIXES:
        if prefix in lower_text:
            lower_text = text.split(prefix)[-1].strip()
    return last_number(lower_text)


def judge_item(gold: str, extracted: Optional[str]) -> Optional[JudgeItem]:
    """What evalkit's math-verify worker checks: the reference's gold as written and the extracted
    answer in ``$...$``; None where the reference counts the answer wrong without a check (no answer)."""
    if extracted is None:
        return None
    return JudgeItem(gold_solution=gold, completion="$" + extracted + "$", minerva_pred="", minerva_gold="")
