"""Text measures IFBench's checkers count with.

* sentences: the rule-based splitter of Google's IFEval utilities that AI2's IFBench checkers use
  (``instructions_util.split_into_sentences``: ``.``/``?``/``!`` end a sentence except after a
  title, an initial, an acronym, a web suffix or inside a number; a run of dots ends one);
* words: runs of ``\\w`` (NLTK's ``RegexpTokenizer(r"\\w+")``), or NLTK's ``word_tokenize``
  (punkt_tab written offline, see ``evalkit.tasks.ifeval.text``) where the checker works on tokens;
* stop words: NLTK's English list;
* part of speech: NLTK's averaged perceptron tagger (``nltk.pos_tag``), whose data
  (``taggers/averaged_perceptron_tagger_eng``) no PyPI package ships (``tagger_problem``).
"""
from __future__ import annotations

import re
import string

from evalkit.tasks.ifeval.text import count_words, word_tokens  # noqa: F401 (re-exported for the checkers)

PUNCTUATION = string.punctuation
#: what the reference strips from a word's ends: ASCII punctuation and spaces
EDGES = PUNCTUATION + " "
_DROP_PUNCTUATION = str.maketrans("", "", PUNCTUATION)


def no_punctuation(text: str) -> str:
    """``text`` without ASCII punctuation."""
    return text.translate(_DROP_PUNCTUATION)


def strip_edges(word: str) -> str:
    return word.strip(EDGES)


#: NLTK's English stop words (``nltk.corpus.stopwords.words("english")``) without the entries
#: holding an apostrophe: words are counted as runs of ``\w``, which never hold one, so only these
#: can match (NLTK's 2025 list adds 19 contractions, all with an apostrophe: the same 153 words).
STOPWORDS = frozenset("""
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself it
its itself they them their theirs themselves what which who whom this that these those am is are was were be been
being have has had having do does did doing a an the and but if or because as until while of at by for with about
against between into through during before after above below to from up down in out on off over under again further
then once here there when where why how all any both each few more most other some such no nor not only own same so
than too very s t can will just don should now d ll m o re ve y ain aren couldn didn doesn hadn hasn haven isn ma
mightn mustn needn shan shouldn wasn weren won wouldn
""".split())

_WORD = re.compile(r"\w+")


def count_stopwords(text: str) -> int:
    return sum(1 for w in _WORD.findall(text) if w.lower() in STOPWORDS)


# ---- sentences ----
_ALPHA = "([A-Za-z])"
_STARTERS = (r"(Mr|Mrs|Ms|Dr|Prof|Capt|Cpt|Lt|He\s|She\s|It\s|They\s|Their\s|Our\s|We\s|But\s|However\s|That\s|"
             r"This\s|Wherever)")
_SUFFIXES = "(Inc|Ltd|Jr|Sr|Co)"
#: the splitter's rewrites, in order: a full stop that does not end a sentence becomes <prd>, an
#: end the punctuation would miss becomes <stop> (the text is padded with spaces first)
_REWRITES = (
    (re.compile("(Mr|St|Mrs|Ms|Dr)[.]"), "\\1<prd>"),                      # titles
    (re.compile("[.](com|net|org|io|gov|edu|me)"), "<prd>\\1"),            # web suffixes
    (re.compile("([0-9])[.]([0-9])"), "\\1<prd>\\2"),                      # decimals
    (re.compile(r"\.{2,}"), lambda m: "<prd>" * len(m.group(0)) + "<stop>"),  # ellipses end a sentence
    ("Ph.D.", "Ph<prd>D<prd>"),
    (re.compile(r"\s" + _ALPHA + "[.] "), " \\1<prd> "),                   # initials
    (re.compile("([A-Z][.][A-Z][.](?:[A-Z][.])?) " + _STARTERS), "\\1<stop> \\2"),  # acronym, new sentence
    (re.compile(_ALPHA + "[.]" + _ALPHA + "[.]" + _ALPHA + "[.]"), "\\1<prd>\\2<prd>\\3<prd>"),
    (re.compile(_ALPHA + "[.]" + _ALPHA + "[.]"), "\\1<prd>\\2<prd>"),
    (re.compile(" " + _SUFFIXES + "[.] " + _STARTERS), " \\1<stop> \\2"),  # "Inc. They"
    (re.compile(" " + _SUFFIXES + "[.]"), " \\1<prd>"),
    (re.compile(" " + _ALPHA + "[.]"), " \\1<prd>"),
    (".”", "”."), ('."', '".'), ('!"', '"!'), ('?"', '"?'),              # closing quotes go inside
    (".", ".<stop>"), ("?", "?<stop>"), ("!", "!<stop>"),
    ("<prd>", "."),
)


def split_into_sentences(text: str) -> list:
    """The sentences of ``text``, stripped (newlines count as spaces; a trailing empty piece is dropped)."""
    text = (" " + text + "  ").replace("\n", " ")
    for pattern, repl in _REWRITES:
        text = text.replace(pattern, repl) if isinstance(pattern, str) else pattern.sub(repl, text)
    sentences = [s.strip() for s in text.split("<stop>")]
    return sentences[:-1] if sentences and not sentences[-1] else sentences


# ---- part of speech ----
TAGGER_RESOURCE = "taggers/averaged_perceptron_tagger_eng/"
TAGGER_FIX = ("python -c \"import nltk; nltk.download('averaged_perceptron_tagger_eng')\" (or put that folder under "
              "$EVALKIT_NLTK_DATA/taggers/)")


def tagger_problem() -> str:
    """'' when NLTK's English part-of-speech tagger can be loaded, else what is missing (one line)."""
    try:
        import nltk
    except ImportError:
        return "NLTK is not installed: pip install 'evalkit-harness[ifbench]'"
    word_tokens("x")  # puts evalkit's NLTK data folder on NLTK's path
    try:
        nltk.data.find(TAGGER_RESOURCE)
    except LookupError:
        return f"NLTK's part-of-speech tagger data averaged_perceptron_tagger_eng is missing: {TAGGER_FIX}"
    return ""


def first_tag(tokens: list) -> str:
    """The tag NLTK's perceptron tagger gives the first token, tagging them all (the next words are
    features of the first one's tag)."""
    import nltk
    try:
        return nltk.pos_tag(tokens)[0][1]
    except LookupError:
        raise RuntimeError(f"ifbench: {tagger_problem() or 'the tagger could not be loaded'}") from None
