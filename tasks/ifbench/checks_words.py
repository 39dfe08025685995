"""IFBench's word and sentence instructions (``words:*``, ``sentence:*``), evalkit's own code.

Each checker is ``check(response, args) -> bool`` with AI2's rules (``ifbench/instructions.py``),
so that every verdict equals the reference's (tests). Words are mostly whitespace-separated with
ASCII punctuation removed; sentences come from the reference's rule-based splitter
(``text.split_into_sentences``); syllables from ``syllapy``; "starts with a verb" is NLTK's
perceptron tag of the first token ("VB*"). Where the reference fails on a sentence with no word
(``words:last_first``) evalkit counts the instruction not followed.
"""
from __future__ import annotations

import collections
import string

from evalkit.tasks.ifbench import text as _t

ALPHABET = string.ascii_lowercase
VOWELS = frozenset("aeiou")
CONSONANTS = frozenset("bcdfghjklmnpqrstvwxyz")
PRIMES = frozenset((2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97))


def alphabet(response: str, a: dict) -> bool:
    """Each word starts with the letter after the previous word's first letter (z wraps to a);
    the first word starts with a letter a-z."""
    words = _t.strip_edges(_t.no_punctuation(response)).split()
    if not words:
        return False
    letter = words[0][0].lower()
    if letter not in ALPHABET:  # a substring test, as the reference's
        return False
    for word in words[1:]:
        word = _t.strip_edges(word).lower()
        if not word:
            continue
        letter = ALPHABET[(ALPHABET.index(letter) + 1) % 26]
        if word[0] != letter:
            return False
    return True


def vowel(response: str, a: dict) -> bool:
    """One line, using at most three of the vowels a, e, i, o, u."""
    lines = response.strip().split("\n")
    return len(lines) == 1 and len(VOWELS & set(lines[0].lower())) <= 3


def consonants(response: str, a: dict) -> bool:
    """Every whitespace word holds two consonants in a row."""
    for word in response.lower().strip().split():
        if not any(x in CONSONANTS and y in CONSONANTS for x, y in zip(word, word[1:])):
            return False
    return True


def _alliteration(sentence: str) -> int:
    """The words of a sentence in runs of the same first letter: 2 for a pair, +1 per further word."""
    words = [w for w in (w.lstrip(_t.EDGES) for w in sentence.lower().split()) if w]
    score, in_run = 0, False
    for w, nxt in zip(words, words[1:]):
        if w[0] == nxt[0]:
            score += 1 if in_run else 2
            in_run = True
        else:
            in_run = False
    return score


def alliteration_increment(response: str, a: dict) -> bool:
    """Each sentence alliterates more than the one before."""
    previous = -1
    for sentence in _t.split_into_sentences(response):
        score = _alliteration(sentence)
        if score <= previous:
            return False
        previous = score
    return True


def palindrome(response: str, a: dict) -> bool:
    """At least ten words (punctuation removed, any case) of five or more letters read the same backwards."""
    words = _t.no_punctuation(response).lower().split()
    return sum(1 for w in words if len(w) >= 5 and w == w[::-1]) >= 10


def prime_lengths(response: str, a: dict) -> bool:
    """Every word (punctuation removed) has a prime length below 100."""
    return all(len(w) in PRIMES for w in _t.no_punctuation(response).split())


def start_verb(response: str, a: dict) -> bool:
    """NLTK tags the first token a verb (VB, VBD, VBG, VBN, VBP, VBZ)."""
    tokens = _t.word_tokens(response)
    return bool(tokens) and "VB" in _t.first_tag(tokens)


def repeats(response: str, a: dict) -> bool:
    """No word (lower case, punctuation removed) occurs more than ``small_n`` times."""
    counts = collections.Counter(_t.no_punctuation(response.lower()).split())
    return all(c <= a["small_n"] for c in counts.values())


def odd_even_syllables(response: str, a: dict) -> bool:
    """Consecutive words alternate between odd and even syllable counts (syllapy)."""
    import syllapy
    parity = [syllapy.count(w) % 2 for w in _t.no_punctuation(response).lower().split() if w.strip()]
    return all(p != q for p, q in zip(parity, parity[1:]))


def last_first(response: str, a: dict) -> bool:
    """Each sentence's last word (any case) is the next sentence's first word."""
    sentences = _t.split_into_sentences(response)
    for this, nxt in zip(sentences, sentences[1:]):
        last, first = this.rstrip(_t.EDGES).split(), nxt.lstrip(_t.EDGES).split()
        if not last or not first:
            return False  # a sentence with no word: the reference fails here
        if last[-1].lower() != first[0].lower():
            return False
    return True


def paragraph_last_first(response: str, a: dict) -> bool:
    """Every non-empty line starts and ends with the same word (lower case, punctuation stripped
    from the line's ends); a line of punctuation alone fails."""
    for line in response.split("\n"):
        line = line.strip().lower()
        if not line:
            continue
        words = _t.strip_edges(line).split()
        if not words or words[0] != words[-1]:
            return False
    return True


def _word_count(sentence: str) -> int:
    return len(_t.no_punctuation(sentence).strip().split())


def increment(response: str, a: dict) -> bool:
    """Each sentence has exactly ``small_n`` more words (punctuation removed) than the one before."""
    counts = [_word_count(s) for s in _t.split_into_sentences(response)]
    return all(nxt == prev + a["small_n"] for prev, nxt in zip(counts, counts[1:]))


def no_consecutive(response: str, a: dict) -> bool:
    """No two consecutive words (lower case, punctuation removed) share their first letter."""
    words = _t.no_punctuation(response.lower()).split()
    return all(w[0] != nxt[0] for w, nxt in zip(words, words[1:]))


def sentence_keyword(response: str, a: dict) -> bool:
    """The N-th sentence holds ``word`` (as a substring, any case)."""
    sentences, n = _t.split_into_sentences(response), int(a["N"])
    return len(sentences) >= n and a["word"].lower() in sentences[n - 1].lower()


def keywords_specific_position(response: str, a: dict) -> bool:
    """The m-th NLTK token of the n-th sentence is ``keyword`` (exactly)."""
    sentences, n, m = _t.split_into_sentences(response), int(a["n"]), int(a["m"])
    if len(sentences) < n:
        return False
    tokens = _t.word_tokens(sentences[n - 1])
    return len(tokens) >= m and tokens[m - 1] == a["keyword"].strip()


def words_position(response: str, a: dict) -> bool:
    """The second and the second-to-last NLTK tokens are both ``keyword`` (exactly)."""
    tokens = _t.word_tokens(response)
    return len(tokens) >= 2 and tokens[1] == tokens[-2] == a["keyword"].strip()


#: instruction id -> (checker, the arguments it needs)
CHECKERS = {
    "words:alphabet": (alphabet, ()),
    "words:vowel": (vowel, ()),
    "words:consonants": (consonants, ()),
    "words:palindrome": (palindrome, ()),
    "words:prime_lengths": (prime_lengths, ()),
    "words:start_verb": (start_verb, ()),
    "words:repeats": (repeats, ("small_n",)),
    "words:odd_even_syllables": (odd_even_syllables, ()),
    "words:last_first": (last_first, ()),
    "words:paragraph_last_first": (paragraph_last_first, ()),
    "words:no_consecutive": (no_consecutive, ()),
    "words:keywords_specific_position": (keywords_specific_position, ("keyword", "n", "m")),
    "words:words_position": (words_position, ("keyword",)),
    "sentence:alliteration_increment": (alliteration_increment, ()),
    "sentence:increment": (increment, ("small_n",)),
    "sentence:keyword": (sentence_keyword, ("word", "N")),
}
