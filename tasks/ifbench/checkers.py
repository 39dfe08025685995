"""IFBench's 58 instruction checkers (AI2, 2025), evalkit's own code: the registry, the check of
each instruction's arguments, and the strict and loose verdicts.

The checkers live by family in ``checks_count`` (count:, ratio:), ``checks_words`` (words:,
sentence:), ``checks_format`` (format:) and ``checks_custom`` (custom:, repeat:). Verdicts are
those of AI2's ``evaluation_lib``: strict checks the response as it is; loose also tries it without
its first line, its last line or both, each with and without ``*`` (the eight IFEval variants,
``evalkit.tasks.ifeval.checkers.loose_variants``), and counts the instruction followed if any
passes; a blank response (or variant) follows nothing. The reference draws random arguments when
the data lacks them; evalkit refuses such data instead (``check_args``, when the data is read).
"""
from __future__ import annotations

from evalkit.tasks.ifbench import checks_count, checks_custom, checks_format, checks_words
from evalkit.tasks.ifeval.checkers import loose_variants

#: instruction id -> (checker, the arguments it needs)
CHECKERS: dict = {**checks_count.CHECKERS, **checks_words.CHECKERS, **checks_format.CHECKERS,
                  **checks_custom.CHECKERS}
#: instructions whose verdict needs NLTK's part-of-speech tagger data
NEEDS_TAGGER = frozenset({"words:start_verb"})
#: arguments that count or index (whole numbers; the data writes some as 3.0)
_WHOLE = ("N", "small_n", "min_words", "max_words", "n", "m", "n_start", "n_end")
_TEXT = ("word", "keyword", "keyword1", "keyword2", "keyword3", "keyword4", "keyword5", "sep", "options",
         "reference_text", "prompt_to_repeat")


def _missing(value) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def check_args(instruction_id: str, args: dict) -> str:
    """'' when ``args`` holds what the checker needs, else what is wrong (one phrase)."""
    if instruction_id not in CHECKERS:
        return f"unknown instruction {instruction_id!r}"
    needed = CHECKERS[instruction_id][1]
    missing = [k for k in needed if _missing(args.get(k))]
    if missing:
        return f"{instruction_id} needs {', '.join(missing)}"
    for k in needed:
        v = args[k]
        if k in _TEXT and not isinstance(v, str):
            return f"{instruction_id}: {k} should be a string, got {type(v).__name__}"
        if k in _WHOLE or k == "percentage":
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                return f"{instruction_id}: {k} should be a number, got {v!r}"
            if k in _WHOLE and (v != int(v) or v < 0):
                return f"{instruction_id}: {k} should be a whole number >= 0, got {v!r}"
    if instruction_id == "count:words_japanese" and args["N"] < 1:
        return f"{instruction_id}: N should be at least 1"
    return ""


def follows(instruction_id: str, args: dict, response: str) -> bool:
    """Whether ``response`` follows one instruction (a blank response follows none)."""
    if not response.strip():
        return False
    return bool(CHECKERS[instruction_id][0](response, args))


def verdicts(instruction_ids, kwargs, response: str) -> tuple[list, list]:
    """(strict, loose) verdict per instruction."""
    variants = loose_variants(response)
    strict, loose = [], []
    for iid, args in zip(instruction_ids, kwargs):
        strict.append(follows(iid, args, response))
        loose.append(strict[-1] or any(follows(iid, args, v) for v in variants[1:]))
    return strict, loose
