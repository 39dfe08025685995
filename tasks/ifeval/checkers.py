"""IFEval's 25 instruction checkers (Zhou et al. 2023), evalkit's own code.

Each checker is ``check(response, args) -> bool`` with the instruction's arguments from the data
(``kwargs``). The rules are those of the reference, Google's ``instruction_following_eval`` as
lm-eval vendors it (``lm_eval/tasks/ifeval/instructions.py``, 0.4.x), which the tests run beside
these on the same responses: keywords are searched as regular expressions (as the reference does),
counts compare with "less than" (<) or "at least" (>=), paragraphs split on ``***`` (or blank lines
for ``nth_paragraph_first_word``), sections on ``SECTION X``, and a language the detector cannot
tell (no letters) counts as followed. The reference draws random arguments when the data lacks
them; evalkit refuses such data instead (``check_args``, when the data is read).

One deliberate difference: ``keywords:letter_frequency`` with a character that is not an ASCII
letter (keys 1122 and 1129 ask for 4 "#" and 6 "!") makes the reference count a letter drawn at
random from Python's global generator, so its verdict on those two prompts changes from run to run;
evalkit counts the character the prompt asks for.
"""
from __future__ import annotations

import collections
import json
import re
from typing import Callable

from evalkit.tasks.ifeval import text as _text

RELATIONS = ("less than", "at least")


def _compare(count: int, relation: str, threshold: int) -> bool:
    return count < threshold if relation == "less than" else count >= threshold


def _language(response: str, a: dict) -> bool:
    try:
        return _text.detect_language(response) == a["language"]
    except _text.LanguageUnknown:
        return True


def _english_case(upper: bool) -> Callable[[str, dict], bool]:
    def check(response: str, a: dict) -> bool:
        if not (response.isupper() if upper else response.islower()):
            return False
        try:
            return _text.detect_language(response) == "en"
        except _text.LanguageUnknown:
            return True
    return check


def _number_sentences(response: str, a: dict) -> bool:
    return _compare(_text.count_sentences(response), a["relation"], a["num_sentences"])


def _number_words(response: str, a: dict) -> bool:
    return _compare(_text.count_words(response), a["relation"], a["num_words"])


def _placeholders(response: str, a: dict) -> bool:
    return len(re.findall(r"\[.*?\]", response)) >= a["num_placeholders"]


def _bullets(response: str, a: dict) -> bool:
    stars = re.findall(r"^\s*\*[^\*].*$", response, flags=re.MULTILINE)
    dashes = re.findall(r"^\s*-.*$", response, flags=re.MULTILINE)
    return len(stars) + len(dashes) == a["num_bullets"]


_CONSTRAINED = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


def _constrained(response: str, a: dict) -> bool:
    stripped = response.strip()
    return any(option in stripped for option in _CONSTRAINED)


def _highlights(response: str, a: dict) -> bool:
    single = [h for h in re.findall(r"\*[^\n\*]*\*", response) if h.strip("*").strip()]
    double = [h for h in re.findall(r"\*\*[^\n\*]*\*\*", response)
              if h.removeprefix("**").removesuffix("**").strip()]
    return len(single) + len(double) >= a["num_highlights"]


def _sections(response: str, a: dict) -> bool:
    splitter = a["section_spliter"].strip()
    return len(re.split(r"\s?" + splitter + r"\s?\d+\s?", response)) - 1 >= a["num_sections"]


def _paragraphs(response: str, a: dict) -> bool:
    parts = re.split(r"\s?\*\*\*\s?", response)
    count = len(parts)
    for i, part in enumerate(parts):
        if not part.strip():
            if i in (0, len(parts) - 1):
                count -= 1
            else:
                return False  # an empty paragraph between two dividers
    return count == a["num_paragraphs"]


def _postscript(response: str, a: dict) -> bool:
    marker = a["postscript_marker"].strip()
    pattern = {"P.P.S": r"\s*p\.\s?p\.\s?s.*$", "P.S.": r"\s*p\.\s?s\..*$"}.get(
        marker, r"\s*" + marker.lower() + r".*$")
    return bool(re.findall(pattern, response.lower(), flags=re.MULTILINE))


def _keywords(response: str, a: dict) -> bool:
    return all(re.search(k, response, flags=re.IGNORECASE) for k in sorted(a["keywords"]))


def _keyword_frequency(response: str, a: dict) -> bool:
    found = len(re.findall(a["keyword"].strip(), response, flags=re.IGNORECASE))
    return _compare(found, a["relation"], a["frequency"])


def _forbidden(response: str, a: dict) -> bool:
    return not any(re.search(r"\b" + w + r"\b", response, flags=re.IGNORECASE)
                   for w in sorted(set(a["forbidden_words"])))


def _letter_frequency(response: str, a: dict) -> bool:
    letter = a["letter"].strip().lower()
    return _compare(collections.Counter(response.lower())[letter], a["let_relation"], a["let_frequency"])


def _json(response: str, a: dict) -> bool:
    body = response.strip()
    for prefix in ("```json", "```Json", "```JSON", "```"):
        body = body.removeprefix(prefix)
    body = body.removesuffix("```").strip()
    try:
        json.loads(body)
    except ValueError:
        return False
    return True


_FIRST_WORD_STOP = set(".,?!'\"")


def _nth_paragraph_first_word(response: str, a: dict) -> bool:
    parts = re.split(r"\n\n", response)
    count = sum(1 for p in parts if p.strip())
    nth = a["nth_paragraph"]
    if nth > count:
        return False
    paragraph = parts[nth - 1].strip()
    if not paragraph:
        return False
    word = paragraph.split()[0].strip().lstrip("'").lstrip('"')
    first = ""
    for ch in word:
        if ch in _FIRST_WORD_STOP:
            break
        first += ch.lower()
    return count == a["num_paragraphs"] and first == a["first_word"].lower()


def _two_responses(response: str, a: dict) -> bool:
    parts = response.split("******")
    kept = []
    for i, part in enumerate(parts):
        if part.strip():
            kept.append(part)
        elif i not in (0, len(parts) - 1):
            return False
    return len(kept) == 2 and kept[0].strip() != kept[1].strip()


def _repeat_prompt(response: str, a: dict) -> bool:
    return response.strip().lower().startswith(a["prompt_to_repeat"].strip().lower())


def _end_phrase(response: str, a: dict) -> bool:
    return response.strip().strip('"').lower().endswith(a["end_phrase"].strip().lower())


def _title(response: str, a: dict) -> bool:
    return any(t.lstrip("<").rstrip(">").strip() for t in re.findall(r"<<[^\n]+>>", response))


def _capital_words(response: str, a: dict) -> bool:
    capitals = sum(1 for w in _text.word_tokens(response) if w.isupper())
    return _compare(capitals, a["capital_relation"], a["capital_frequency"])


def _no_comma(response: str, a: dict) -> bool:
    return "," not in response


def _quotation(response: str, a: dict) -> bool:
    s = response.strip()
    return len(s) > 1 and s[0] == '"' and s[-1] == '"'


#: instruction id -> (checker, the arguments it needs)
CHECKERS: dict = {
    "keywords:existence": (_keywords, ("keywords",)),
    "keywords:frequency": (_keyword_frequency, ("keyword", "frequency", "relation")),
    "keywords:forbidden_words": (_forbidden, ("forbidden_words",)),
    "keywords:letter_frequency": (_letter_frequency, ("letter", "let_frequency", "let_relation")),
    "language:response_language": (_language, ("language",)),
    "length_constraints:number_sentences": (_number_sentences, ("num_sentences", "relation")),
    "length_constraints:number_paragraphs": (_paragraphs, ("num_paragraphs",)),
    "length_constraints:number_words": (_number_words, ("num_words", "relation")),
    "length_constraints:nth_paragraph_first_word": (_nth_paragraph_first_word,
                                                    ("num_paragraphs", "nth_paragraph", "first_word")),
    "detectable_content:number_placeholders": (_placeholders, ("num_placeholders",)),
    "detectable_content:postscript": (_postscript, ("postscript_marker",)),
    "detectable_format:number_bullet_lists": (_bullets, ("num_bullets",)),
    "detectable_format:constrained_response": (_constrained, ()),
    "detectable_format:number_highlighted_sections": (_highlights, ("num_highlights",)),
    "detectable_format:multiple_sections": (_sections, ("section_spliter", "num_sections")),
    "detectable_format:json_format": (_json, ()),
    "detectable_format:title": (_title, ()),
    "combination:two_responses": (_two_responses, ()),
    "combination:repeat_prompt": (_repeat_prompt, ("prompt_to_repeat",)),
    "startend:end_checker": (_end_phrase, ("end_phrase",)),
    "change_case:capital_word_frequency": (_capital_words, ("capital_frequency", "capital_relation")),
    "change_case:english_capital": (_english_case(True), ()),
    "change_case:english_lowercase": (_english_case(False), ()),
    "punctuation:no_comma": (_no_comma, ()),
    "startend:quotation": (_quotation, ()),
}

_RELATION_ARGS = ("relation", "let_relation", "capital_relation")


def check_args(instruction_id: str, args: dict) -> str:
    """'' when ``args`` holds what the checker needs, else what is wrong (one phrase)."""
    if instruction_id not in CHECKERS:
        return f"unknown instruction {instruction_id!r}"
    missing = [k for k in CHECKERS[instruction_id][1] if args.get(k) in (None, "", [])]
    if missing:
        return f"{instruction_id} needs {', '.join(missing)}"
    letter = args.get("letter")
    if letter is not None and not (isinstance(letter, str) and len(letter.strip()) == 1):
        return f"{instruction_id}: letter {letter!r} is not one character"
    for k in _RELATION_ARGS:
        if k in args and args[k] not in RELATIONS:
            return f"{instruction_id}: {k} {args[k]!r} is not one of {RELATIONS}"
    return ""


def follows(instruction_id: str, args: dict, response: str) -> bool:
    """Whether ``response`` follows one instruction (an empty response follows none)."""
    if not response.strip():
        return False
    return bool(CHECKERS[instruction_id][0](response, args))


def loose_variants(response: str) -> list:
    """The eight texts the loose verdict tries: the response, without its first and/or last line,
    each also with every ``*`` removed."""
    lines = response.split("\n")
    cut = ["\n".join(lines[1:]).strip(), "\n".join(lines[:-1]).strip(), "\n".join(lines[1:-1]).strip()]
    return [response, response.replace("*", ""), *cut, *(c.replace("*", "") for c in cut)]


def verdicts(instruction_ids, kwargs, response: str) -> tuple[list, list]:
    """(strict, loose) verdict per instruction."""
    variants = loose_variants(response)
    strict, loose = [], []
    for iid, args in zip(instruction_ids, kwargs):
        strict.append(follows(iid, args, response))
        loose.append(strict[-1] or any(follows(iid, args, v) for v in variants[1:]))
    return strict, loose
