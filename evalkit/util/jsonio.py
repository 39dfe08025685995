"""Reading JSON and JSONL files with errors that name the file and the line (truncated, binary, invalid)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator


def read_json(path: Path):
    """A JSON file, or a ValueError naming the file and line (truncated, binary, invalid)."""
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text (byte {e.start}); is it a binary file?") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        cut = " (the file looks truncated)" if e.pos >= len(text.rstrip()) else ""
        raise ValueError(f"{path}:{e.lineno}: invalid JSON ({e.msg} at column {e.colno}){cut}") from None


def read_jsonl(path: Path) -> Iterator[dict]:
    """The objects of a JSONL file; a bad line raises a ValueError naming the file and line."""
    return (obj for _, obj in numbered_jsonl(path))


def numbered_jsonl(path: Path) -> Iterator[tuple[int, object]]:
    """(line number, value) of every non-blank line of a JSONL file; a bad line raises a ValueError
    naming the file and line."""
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"{path}:{lineno}: not UTF-8 text; is it a binary file?") from None
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as e:
                cut = " (the file looks truncated)" if not raw.endswith(b"\n") else ""
                raise ValueError(f"{path}:{lineno}: invalid JSON ({e.msg} at column {e.colno}){cut}") from None
