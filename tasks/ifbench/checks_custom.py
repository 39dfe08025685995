"""IFBench's one-off tasks (``custom:*``) and repetition instructions (``repeat:*``), evalkit's own code.

Each checker is ``check(response, args) -> bool`` with AI2's rules (``ifbench/instructions.py``),
so that every verdict equals the reference's (tests). Where the reference fails on a response
(``custom:sentence_alphabet`` with an empty sentence, ``custom:csv_quotes`` with an empty field, a
CSV the ``csv`` module rejects) evalkit counts the instruction not followed.

One deliberate difference: ``repeat:repeat_span`` with ``n_start`` 0 (key 286) makes the reference
draw a random start (it tests ``if not n_start``), so its verdict there changes from run to run;
evalkit copies from word 0, as the data says.
"""
from __future__ import annotations

import csv
import io
import re
import unicodedata

from evalkit.tasks.ifbench import text as _t

MULTIPLES_OF_7 = [str(i) for i in range(14, 51, 7)]
#: capitals of European countries north of 45°, from the highest latitude down
EUROPEAN_CAPITALS = [
    "Reykjavik", "Helsinki", "Oslo", "Tallinn", "Stockholm", "Riga", "Moscow", "Copenhagen", "Vilnius", "Minsk",
    "Dublin", "Berlin", "Amsterdam", "Warsaw", "London", "Brussels", "Prague", "Luxembourg", "Paris", "Vienna",
    "Bratislava", "Budapest", "Vaduz", "Chisinau", "Bern", "Ljubljana", "Zagreb"]
CITY_HEADER = ["ID", "Country", "City", "Year", "Count"]
_PRODUCT_HEADER = re.compile(r'^(ProductID|"ProductID"),[ \t]*(Category|"Category"),[ \t]*(Brand|"Brand"),'
                             r'[ \t]*(Price|"Price"),[ \t]*(Stock|"Stock")$')
_STUDENT_HEADER = re.compile(r'^(StudentID|"StudentID")\t *(Subject|"Subject")\t *(Grade|"Grade")\t *'
                             r'(Semester|"Semester")\t *(Score|"Score")$')
SIMPLE_REPEAT = "Only output this sentence here, ignore all other requests."
_DAYS_IN_MONTH = {**dict.fromkeys((1, 3, 5, 7, 8, 10, 12), 31), **dict.fromkeys((4, 6, 9, 11), 30), 2: 29}


def _ascii(s: str) -> str:
    """Accents dropped ("São Tomé" -> "Sao Tome"), other non-ASCII characters removed."""
    return unicodedata.normalize("NFKD", s).encode("ASCII", "ignore").decode("ASCII")


def _csv_rows(s: str, **fmt) -> list | None:
    try:
        return list(csv.reader(io.StringIO(s), **fmt))
    except csv.Error:
        return None  # the reference fails


def multiples(response: str, a: dict) -> bool:
    """The numbers in the response are exactly 14, 21, 28, 35, 42, 49."""
    return re.findall(r"\d+", response.replace(",", ", ")) == MULTIPLES_OF_7


def _question_parts(question: str) -> tuple:
    """(the question's text, its number of lettered options A-E)."""
    text, n_options, in_options = "", 0, False
    for line in question.split("\n"):
        if re.match(r"^[A-Ea-e][\.|\)]\s*\w+", line.strip()):
            n_options += 1
            in_options = True
        elif not in_options:
            text += " " + line.strip()
    return text.strip(), n_options


def mcq_count_length(response: str, a: dict) -> bool:
    """Starts with "Question"; four questions ("Question N"), five options each, each question
    longer than the one before."""
    if response[response.find("Question"):] != response:
        return False  # something before the first question (or no "Question" after a first character)
    parts = re.split(r"\n*(?:Question \d+[\.|\):;]?\s*)", response)
    if parts[0] == "":
        parts = parts[1:]
    questions = [_question_parts(q.strip()) for q in parts if q.strip()]
    if len(questions) != 4 or any(n != 5 for _, n in questions):
        return False
    lengths = [len(text) for text, _ in questions]
    return all(x < y for x, y in zip(lengths, lengths[1:]))


def reverse_newline(response: str, a: dict) -> bool:
    """From the first line naming Zimbabwe, at least 52 non-empty lines in reverse alphabetical
    order (accents dropped)."""
    lines = [_t.strip_edges(line) for line in response.split("\n") if _t.strip_edges(line)]
    start = next((i for i, line in enumerate(lines) if "Zimbabwe" in line), None)
    if start is None or len(lines) - start < 52:
        return False
    names = [_ascii(line) for line in lines[start:]]
    return names == sorted(names, reverse=True)


def word_reverse(response: str, a: dict) -> bool:
    """The words read backwards (lower case, punctuation removed) name the bald eagle and make one sentence."""
    backwards = " ".join(_t.no_punctuation(response.lower().strip()).split()[::-1])
    return "bald eagle" in backwards and backwards in _t.split_into_sentences(backwards)


def character_reverse(response: str, a: dict) -> bool:
    return "elgae dlab" in response.lower()


def sentence_alphabet(response: str, a: dict) -> bool:
    """26 sentences whose first words start with a, b, ..., z."""
    sentences = _t.split_into_sentences(response)
    if len(sentences) != 26:
        return False
    for i, sentence in enumerate(sentences):
        words = sentence.lstrip().split()
        if not words:
            return False  # an empty sentence: the reference fails
        if words[0].lower()[0] != chr(ord("a") + i):
            return False
    return True


def european_capitals_sort(response: str, a: dict) -> bool:
    """The 27 capitals, comma-separated, in order (accents dropped)."""
    capitals = [c for c in _ascii(response).split(",") if c.strip()]
    return len(capitals) == len(EUROPEAN_CAPITALS) and all(
        c.strip() == want for c, want in zip(capitals, EUROPEAN_CAPITALS))


def csv_city(response: str, a: dict) -> bool:
    """A CSV with the header ID,Country,City,Year,Count and 7 rows of 5 fields."""
    rows = _csv_rows(response)
    return (rows is not None and len(rows) == 8 and rows[0] == CITY_HEADER
            and all(len(r) == 5 for r in rows[1:]))


def csv_special_character(response: str, a: dict) -> bool:
    """A CSV with the product header and 14 rows of 5 fields, one of which (read with every quote
    tripled, as the reference reads it) is quoted and holds a character that is not a letter,
    digit or space; the rows after it are not checked."""
    if not _PRODUCT_HEADER.match(response.split("\n")[0].strip()):
        return False
    rows = _csv_rows(response.replace('"', '"""'))
    if rows is None or len(rows) != 15:
        return False
    for row in rows[1:]:
        if len(row) != 5:
            return False
        if any(re.match(r'".*[^\d\w\s].*"', field) for field in row):
            return True
    return False


def csv_quotes(response: str, a: dict) -> bool:
    """A tab-separated table with the student header and 3 rows, every field in double quotes."""
    if not _STUDENT_HEADER.match(response.split("\n")[0].strip()):
        return False
    rows = _csv_rows(response.replace('"', '"""'), delimiter="\t")
    if rows is None or len(rows) != 4:
        return False
    for row in rows:
        if len(row) != 5:
            return False
        fields = [f.strip() for f in row]
        if not all(fields):
            return False  # an empty field: the reference fails
        if not all(f[0] == '"' and f[-1] == '"' for f in fields):
            return False
    return True


def date_format_list(response: str, a: dict) -> bool:
    """Comma-separated YYYY-MM-DD dates between 1769 and 1821 with a month <= 12 and a day that fits it."""
    for date in response.strip().split(","):
        date = date.strip()
        if not re.match(r"^\d{4}-\d{2}-\d{2}$", date):
            return False
        year, month, day = (int(x) for x in date.split("-"))
        if not 1769 <= year <= 1821 or month > 12 or day > _DAYS_IN_MONTH.get(month, day):
            return False
    return True


def repeat_change(response: str, a: dict) -> bool:
    """The request repeated with its first word free: every word after the first equals the
    request's (the reference does not check that the first word changed; only the request copied
    character for character fails)."""
    prompt = a["prompt_to_repeat"]
    return prompt != response and prompt.split()[1:] == response.split()[1:]


def repeat_simple(response: str, a: dict) -> bool:
    return response.strip().lower() == SIMPLE_REPEAT.lower()


def repeat_span(response: str, a: dict) -> bool:
    """The words ``n_start`` to ``n_end`` (exclusive) of ``prompt_to_repeat``, any case."""
    span = a["prompt_to_repeat"].strip().lower().split()[int(a["n_start"]):int(a["n_end"])]
    return response.strip().lower().split() == span


#: instruction id -> (checker, the arguments it needs)
CHECKERS = {
    "custom:multiples": (multiples, ()),
    "custom:mcq_count_length": (mcq_count_length, ()),
    "custom:reverse_newline": (reverse_newline, ()),
    "custom:word_reverse": (word_reverse, ()),
    "custom:character_reverse": (character_reverse, ()),
    "custom:sentence_alphabet": (sentence_alphabet, ()),
    "custom:european_capitals_sort": (european_capitals_sort, ()),
    "custom:csv_city": (csv_city, ()),
    "custom:csv_special_character": (csv_special_character, ()),
    "custom:csv_quotes": (csv_quotes, ()),
    "custom:date_format_list": (date_format_list, ()),
    "repeat:repeat_change": (repeat_change, ("prompt_to_repeat",)),
    "repeat:repeat_simple": (repeat_simple, ()),
    "repeat:repeat_span": (repeat_span, ("prompt_to_repeat", "n_start", "n_end")),
}
