"""IFBench's format instructions (``format:*``), evalkit's own code.

Each checker is ``check(response, args) -> bool`` with AI2's rules (``ifbench/instructions.py``),
their letter kept where it departs from the instruction's words, so that every verdict equals the
reference's (tests). The departures worth knowing when reading scores:

* ``format:sub-bullets`` passes when every piece after a ``*`` holds a ``-`` (a text with no ``*``
  passes);
* ``format:no_bullets_bullets``: after the first line that has no sentence (an empty line) any
  line that is not a ``*`` bullet fails the response, a trailing empty line included;
* ``format:line_indent`` drops blank lines the way the reference does (removing from the list it
  walks, so a blank line right after another is kept and then fails the stairs);
* ``format:thesis`` reads the thesis and the text after it with ``<i>``'s offsets also for ``<em>``;
* ``format:quote_unquote``: a response of digits and punctuation alone, where the reference
  fails, does not follow it.
"""
from __future__ import annotations

import re
import string

from evalkit.tasks.ifbench import text as _t
from evalkit.tasks.ifbench.text import split_into_sentences

_PAIRS = {")": "(", "]": "[", "}": "{"}


def parentheses(response: str, a: dict) -> bool:
    """A bracket group (any of ( [ {) closed after reaching five levels; a mismatched closer
    starts the count again."""
    stack, deepest = [], 0
    for ch in response:
        if ch in "([{":
            stack.append(ch)
            deepest = max(deepest, len(stack))
        elif ch in _PAIRS:
            if stack and stack[-1] == _PAIRS[ch]:
                stack.pop()
                if deepest >= 5 and len(stack) < deepest:
                    return True
            else:
                stack, deepest = [], 0
    return False


def quotes(response: str, a: dict) -> bool:
    """Quotes three levels deep, alternating " and ': a quote character closes the innermost open
    quote when it matches it, else opens a new one; it passes once three levels have closed."""
    stack, reached = [], 0
    for ch in response:
        if stack and ch == stack[-1]:
            stack.pop()
            if reached - len(stack) >= 3:
                return True
        elif ch in "\"'":
            stack.append(ch)
            reached = max(reached, len(stack))
    return False


def _option_list(options: str) -> tuple:
    """(strict, the options): letter options ("a), b), c), d)") must be given exactly."""
    strict = re.match(r"\W*[aA]\W*[bB]\W*[cC]\W*", options) is not None
    sep = "/" if "/" in options else "or" if "or" in options else ","
    return strict, [o.strip() for o in options.split(sep)]


def options(response: str, a: dict) -> bool:
    """The response is one of the options (letters exactly; words in any case, punctuation and
    spaces stripped from the ends)."""
    strict, choices = _option_list(a["options"])
    if strict:
        return response in choices
    answer = _t.strip_edges(response).lower()
    return any(_t.strip_edges(o).lower() == answer for o in choices)


def newline(response: str, a: dict) -> bool:
    """As many non-empty lines as words (punctuation removed)."""
    body = _t.no_punctuation(response).strip()
    return len([line for line in body.split("\n") if line != ""]) == len(body.split())


def _is_emoji(ch: str) -> bool:
    import emoji
    return emoji.is_emoji(ch)


def _bare(sentence: str) -> str:
    return _t.no_punctuation(sentence).strip()


def emoji_sentences(response: str, a: dict) -> bool:
    """Every sentence ends with an emoji (its last or second-to-last character once punctuation is
    removed), or the next sentence starts with one."""
    sentences = split_into_sentences(response)
    for i, sentence in enumerate(sentences):
        bare = _bare(sentence)
        if not bare:
            return False
        if _is_emoji(bare[-1]) or _is_emoji(bare[-2] if len(bare) > 1 else bare[-1]):
            continue
        if i == len(sentences) - 1:
            return False
        after = _bare(sentences[i + 1])
        if not after or not _is_emoji(after[0]):
            return False
    return True


def _drop_blank_lines(lines: list) -> list:
    """The reference's ``for line in lines: if not line.strip(): lines.remove(line)``: removing
    from the list being walked skips the line after each removed one."""
    lines, i = list(lines), 0
    while i < len(lines):
        if not lines[i].strip():
            lines.remove(lines[i])
        i += 1
    return lines


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def line_indent(response: str, a: dict) -> bool:
    """Each line is indented (by spaces) more than the one before."""
    lines = _drop_blank_lines(response.split("\n"))
    return all(_indent(nxt) > _indent(line) for line, nxt in zip(lines, lines[1:]))


def quote_unquote(response: str, a: dict) -> bool:
    """No two quotes in a row (spaces ignored, curly quotes as straight ones) and no quote at the
    end (trailing digits and other punctuation ignored)."""
    body = response.replace("“", '"').replace("”", '"').replace("'\"'", "")
    body = "".join(body.split())
    if '""' in body:
        return False
    tail = body.strip(string.digits + string.punctuation.replace('"', ""))
    return bool(tail) and tail[-1] != '"'  # nothing left: the reference fails


def special_list(response: str, a: dict) -> bool:
    """The marker ``sep`` occurs at least twice."""
    return len(re.findall(re.escape(a["sep"]), response)) >= 2


def thesis(response: str, a: dict) -> bool:
    """An HTML-italic thesis (<i>...</i> or <em>...</em>) that is not blank, followed by text."""
    start = response.find("<i>")
    if start == -1:
        start = response.find("<em>")
        if start == -1:
            return False
    rest = response[start:]
    end = rest.find("</i>")
    if end == -1:
        end = rest.find("</em>")
        if end == -1:
            return False
    return rest[3:end].strip() != "" and rest[end + 4:].strip() != ""


def sub_bullets(response: str, a: dict) -> bool:
    """Every piece of text after a ``*`` holds a ``-``."""
    return all("-" in piece for piece in response.split("*")[1:])


def no_bullets_bullets(response: str, a: dict) -> bool:
    """At least two sentences, then at least two ``*`` lines and nothing else."""
    in_sentences, sentences, bullets = True, 0, 0
    for line in response.split("\n"):
        if line.strip().startswith("*"):
            in_sentences = False
            if sentences < 2:
                return False
            bullets += 1
        elif in_sentences:
            found = split_into_sentences(line.strip())
            sentences += len(found)
            in_sentences = bool(found)  # the reference keeps the list in its flag: an empty line ends the text part
        else:
            return False
    return bullets >= 2


def title_case(response: str, a: dict) -> bool:
    """No NLTK token starts with a lower-case letter followed by letters all lower or all upper case
    ("a" and "x1" pass, as in the reference)."""
    for token in _t.word_tokens(response):
        head, tail = token[0], token[1:]
        if head.isupper() and tail.islower():
            continue
        if head.islower() and (tail.isupper() or tail.islower()):
            return False
    return True


def output_template(response: str, a: dict) -> bool:
    return all(part in response for part in ("My Answer:", "My Conclusion:", "Future Outlook:"))


def no_whitespace(response: str, a: dict) -> bool:
    return not any(ch.isspace() for ch in response)


#: instruction id -> (checker, the arguments it needs)
CHECKERS = {
    "format:parentheses": (parentheses, ()),
    "format:quotes": (quotes, ()),
    "format:options": (options, ("options",)),
    "format:newline": (newline, ()),
    "format:emoji": (emoji_sentences, ()),
    "format:line_indent": (line_indent, ()),
    "format:quote_unquote": (quote_unquote, ()),
    "format:list": (special_list, ("sep",)),
    "format:thesis": (thesis, ()),
    "format:sub-bullets": (sub_bullets, ()),
    "format:no_bullets_bullets": (no_bullets_bullets, ()),
    "format:title_case": (title_case, ()),
    "format:output_template": (output_template, ()),
    "format:no_whitespace": (no_whitespace, ()),
}
