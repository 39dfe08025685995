"""IFBench's counting and ratio instructions (``count:*``, ``ratio:*``), evalkit's own code.

Each checker is ``check(response, args) -> bool``; the rules are AI2's (``ifbench/instructions.py``),
quirks included, so that every verdict equals the reference's (tests):

* ``count:conjunctions`` counts distinct *spellings* ("and", "And", "and," are three), as the
  reference keeps the word before stripping it;
* ``count:numbers`` removes punctuation first, so "3.14" and "1,000" are one number each;
* ``ratio:overlap`` compares sets of *character* trigrams;
* where the reference divides by zero (``ratio:stop_words`` on a response with no word,
  ``ratio:overlap`` on one shorter than three characters) it stops the whole run; evalkit counts
  the instruction not followed.
"""
from __future__ import annotations

import re

from evalkit.tasks.ifbench import text as _t

CONJUNCTIONS = ("and", "but", "for", "nor", "or", "so", "yet")
PERSON_NAMES = (
    "Emma", "Liam", "Sophia", "Jackson", "Olivia", "Noah", "Ava", "Lucas", "Isabella", "Mason", "Mia", "Ethan",
    "Charlotte", "Alexander", "Amelia", "Benjamin", "Harper", "Leo", "Zoe", "Daniel", "Chloe", "Samuel", "Lily",
    "Matthew", "Grace", "Owen", "Abigail", "Gabriel", "Ella", "Jacob", "Scarlett", "Nathan", "Victoria", "Elijah",
    "Layla", "Nicholas", "Audrey", "David", "Hannah", "Christopher", "Penelope", "Thomas", "Nora", "Andrew", "Aria",
    "Joseph", "Claire", "Ryan", "Stella", "Jonathan")
PRONOUNS = frozenset((
    "i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his himself she her "
    "hers herself it its itself they them their theirs themselves").split())
KEYWORD_TIMES = (1, 2, 3, 5, 7)  # keyword1 once, keyword2 twice, ... keyword5 seven times


def word_count_range(response: str, a: dict) -> bool:
    return a["min_words"] <= _t.count_words(response) <= a["max_words"]


def unique_word_count(response: str, a: dict) -> bool:
    """At least N distinct lower-cased words, punctuation stripped from their ends."""
    return len({_t.strip_edges(w) for w in response.lower().split()}) >= a["N"]


def stop_words(response: str, a: dict) -> bool:
    """Stop words are at most ``percentage`` % of the words."""
    words = _t.count_words(response)
    if not words:
        return False  # the reference divides by zero
    return (_t.count_stopwords(response) / words) * 100 <= a["percentage"]


def _sentence_ends(response: str) -> tuple:
    sentences = _t.split_into_sentences(response)
    return tuple(sum(1 for s in sentences if s.endswith(end)) for end in ".?!")


def sentence_type(response: str, a: dict) -> bool:
    """Twice as many sentences ending in "." as ending in "?"."""
    declarative, interrogative, _ = _sentence_ends(response)
    return declarative == 2 * interrogative


def sentence_balance(response: str, a: dict) -> bool:
    """As many sentences ending in "." as in "?" and as in "!"."""
    declarative, interrogative, exclamatory = _sentence_ends(response)
    return declarative == interrogative == exclamatory


def conjunctions(response: str, a: dict) -> bool:
    """At least ``small_n`` distinct words (as written) that are coordinating conjunctions."""
    found = {w for w in response.split() if _t.strip_edges(w).lower() in CONJUNCTIONS}
    return len(found) >= a["small_n"]


def person_names(response: str, a: dict) -> bool:
    """At least N names of the list appear (as substrings, case-sensitive)."""
    return sum(1 for name in PERSON_NAMES if name in response) >= a["N"]


def _trigrams(s: str) -> set:
    return {s[i:i + 3] for i in range(len(s) - 2)}


def overlap(response: str, a: dict) -> bool:
    """The share of the response's character trigrams found in the reference text is within
    2 points of ``percentage``."""
    mine = _trigrams(response)
    if not mine:
        return False  # the reference divides by zero
    share = len(mine & _trigrams(a["reference_text"])) / len(mine)
    return a["percentage"] - 2 <= share * 100 <= a["percentage"] + 2


def numbers(response: str, a: dict) -> bool:
    """Exactly N runs of digits once punctuation is removed."""
    return len(re.findall(r"\d+", _t.no_punctuation(response))) == a["N"]


def punctuation(response: str, a: dict) -> bool:
    """An interrobang (?!, !? or ‽) and, besides the first ?! (or !?) pair, each of . , ! ? ; :"""
    if not ("!?" in response or "?!" in response or "‽" in response):
        return False
    rest = response.replace("?!", "", 1)
    if len(rest) == len(response):
        rest = response.replace("!?", "", 1)
    return {".", ",", "!", "?", ";", ":"} <= set(rest)


def sentence_words(response: str, a: dict) -> bool:
    """Exactly three sentences, all of the same length in characters (the words are not compared,
    as in the reference)."""
    sentences = _t.split_into_sentences(response)
    return len(sentences) == 3 and len({len(s.strip()) for s in sentences}) == 1


def words_japanese(response: str, a: dict) -> bool:
    """Every N-th whitespace word (its punctuation stripped; empty or all-digit words exempt) holds
    a kana or CJK ideograph."""
    n = a["N"]
    for i, word in enumerate(response.split(), 1):
        word = _t.strip_edges(word)
        if i % n == 0 and word and not word.isdigit() and not re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", word):
            return False
    return True


def pronouns(response: str, a: dict) -> bool:
    """At least N personal pronouns ("she/her" counts two)."""
    words = _t.no_punctuation(response.replace("/", " ").lower()).split()
    return sum(1 for w in words if w in PRONOUNS) >= a["N"]


def keywords_multiple(response: str, a: dict) -> bool:
    """keyword1..keyword5 occur (as substrings, any case) exactly 1, 2, 3, 5 and 7 times."""
    low = response.lower()
    return all(low.count(a[f"keyword{i}"].strip().lower()) == times for i, times in enumerate(KEYWORD_TIMES, 1))


#: instruction id -> (checker, the arguments it needs)
CHECKERS = {
    "count:word_count_range": (word_count_range, ("min_words", "max_words")),
    "count:unique_word_count": (unique_word_count, ("N",)),
    "count:conjunctions": (conjunctions, ("small_n",)),
    "count:person_names": (person_names, ("N",)),
    "count:numbers": (numbers, ("N",)),
    "count:punctuation": (punctuation, ()),
    "count:words_japanese": (words_japanese, ("N",)),
    "count:pronouns": (pronouns, ("N",)),
    "count:keywords_multiple": (keywords_multiple, tuple(f"keyword{i}" for i in range(1, 6))),
    "ratio:stop_words": (stop_words, ("percentage",)),
    "ratio:sentence_type": (sentence_type, ()),
    "ratio:sentence_balance": (sentence_balance, ()),
    "ratio:overlap": (overlap, ("reference_text", "percentage")),
    "ratio:sentence_words": (sentence_words, ()),
}
