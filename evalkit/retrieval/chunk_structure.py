"""Chunking by structure: a text cut into its natural pieces (paragraphs, markdown sections, top-level
Python ``def``/``class`` blocks), consecutive small pieces merged up to ``size`` words, oversized ones
split. Every chunk is a span of the original text (``text[start:end]``, whitespace at its ends
trimmed), so BM25 and the embedder index exactly the same characters.

- ``paragraphs``: pieces separated by blank lines.
- ``markdown``: a piece starts at each heading line (``#`` to ``######`` then a space).
- ``code``: a piece starts at each top-level ``def``/``async def``/``class`` (with its decorators and
  the column-0 comment lines directly above), and at the first top-level statement after such a block;
  indented lines, blank lines and column-0 closing brackets stay in the current piece. Line-based, so
  Python 2 files (MBPP has some) cut alike.
- ``auto``: code when a line starts a top-level def/class (a Python ``# comment`` line looks like a
  heading, so code is asked first), else markdown when a line is a heading, else paragraphs.

A piece over ``size`` words is split at blank lines, then at line ends, then into ``size``-word runs.
"""
from __future__ import annotations

import re

MODES = ("auto", "paragraphs", "markdown", "code")
_HEADING = re.compile(r"^#{1,6}[ \t]", re.M)
_DEF = re.compile(r"^(?:async[ \t]+def|def|class)[ \t]", re.M)
_BLANK_RUN = re.compile(r"\n[ \t]*(?:\r?\n[ \t]*)+")
_WORD = re.compile(r"\S+")


def detect_mode(text: str) -> str:
    if _DEF.search(text):
        return "code"
    if _HEADING.search(text):
        return "markdown"
    return "paragraphs"


def _trim(text: str, start: int, end: int):
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None


def _cut(text: str, start: int, end: int, cuts: list[int]) -> list[tuple[int, int]]:
    """Spans between the cut positions (absolute offsets inside [start, end)), trimmed, empty ones dropped."""
    bounds = [start] + sorted(c for c in set(cuts) if start < c < end) + [end]
    return [s for s in (_trim(text, a, b) for a, b in zip(bounds, bounds[1:])) if s]


def _line_starts(text: str, start: int, end: int) -> list[int]:
    return [start] + [start + m.end() for m in re.finditer(r"\n", text[start:end]) if start + m.end() < end]


def paragraph_spans(text: str, start: int = 0, end=None) -> list[tuple[int, int]]:
    end = len(text) if end is None else end
    return _cut(text, start, end, [start + m.start() for m in _BLANK_RUN.finditer(text[start:end])])


def markdown_spans(text: str) -> list[tuple[int, int]]:
    return _cut(text, 0, len(text), [m.start() for m in _HEADING.finditer(text)])


def _line_kind(line: str) -> str:
    if not line.strip():
        return "blank"
    if line[0] in " \t":
        return "indented"
    if line.startswith("@"):
        return "deco"
    if _DEF.match(line):
        return "def"
    if line.startswith("#"):
        return "comment"
    if line[0] in ")]}":
        return "close"
    return "stmt"


def code_spans(text: str) -> list[tuple[int, int]]:
    starts = _line_starts(text, 0, len(text))
    lines = [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]
    kinds = [_line_kind(x.rstrip("\r\n")) for x in lines]
    cuts, in_block, prev = [], False, None  # prev: kind of the last non-blank line
    for i, kind in enumerate(kinds):
        if kind in ("deco", "def") and prev != "deco":
            j = i
            while j > 0 and kinds[j - 1] == "comment":  # comments directly above belong to the block
                j -= 1
            cuts.append(starts[j])
            in_block = True
        elif kind == "stmt" and in_block:
            cuts.append(starts[i])
            in_block = False
        if kind != "blank":
            prev = kind
    return _cut(text, 0, len(text), cuts)


def _words(text: str, span) -> int:
    return len(_WORD.findall(text, span[0], span[1]))


def _split_oversized(text: str, span, size: int) -> list[tuple[int, int]]:
    if _words(text, span) <= size:
        return [span]
    a, b = span
    for finer in (lambda: paragraph_spans(text, a, b), lambda: _cut(text, a, b, _line_starts(text, a, b))):
        parts = finer()
        if len(parts) > 1:
            return [s for p in _merge(text, parts, size) for s in _split_oversized(text, p, size)]
    words = list(_WORD.finditer(text, a, b))
    return [(words[i].start(), words[min(i + size, len(words)) - 1].end()) for i in range(0, len(words), size)]


def _merge(text: str, spans, size: int) -> list[tuple[int, int]]:
    """Consecutive spans joined (as the text between them) while the joined piece has <= size words."""
    out, cur, n = [], None, 0
    for s in spans:
        w = _words(text, s)
        if cur is not None and n + w <= size:
            cur, n = (cur[0], s[1]), n + w
        else:
            if cur is not None:
                out.append(cur)
            cur, n = s, w
    if cur is not None:
        out.append(cur)
    return out


def structure_spans(text: str, size: int, mode: str = "auto") -> tuple[list[tuple[int, int]], str]:
    """(chunk spans, the mode used): pieces of ``mode``, merged up to ``size`` words, oversized ones split."""
    if mode not in MODES:
        raise ValueError(f"chunking structure mode {mode!r}: expected one of {', '.join(MODES)}")
    used = detect_mode(text) if mode == "auto" else mode
    pieces = {"paragraphs": paragraph_spans, "markdown": markdown_spans, "code": code_spans}[used](text)
    out = [s for p in _merge(text, pieces, size) for s in _split_oversized(text, p, size)]
    return out, used
