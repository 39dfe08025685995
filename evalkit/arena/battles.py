"""Pairwise "battle" records for the arena, and their (de)serialisation.

A battle is one pairwise judgement: two models answered the same prompt and a
judge (a person or an LLM) said which answer was better, or that they tied.
The on-disk format is the one FastChat / LMArena and arena-hard-auto use, so
their published battle files load unchanged:

    {"question_id": 7, "model_a": "m1", "model_b": "m2", "winner": "model_a"}

``winner`` is one of ``"model_a"``, ``"model_b"``, ``"tie"`` or
``"tie (bothbad)"`` (LMArena's "both are bad" vote, which every rating function
here treats exactly like ``"tie"``, as FastChat does).  ``prompt_id`` (or
FastChat's ``question_id``) and ``judge`` are optional; any other keys are kept
verbatim in ``Battle.extra`` (e.g. LMArena's ``conv_metadata`` used by style
control, ``tstamp``, ``language``) and written back out by ``write_battles``.

Files are either JSON Lines (one object per line; blank lines ignored), one
JSON array of objects, or parquet (one row per battle).  Bad input raises ``BattleFormatError`` (a
``ValueError``) whose message names the file, the 1-based line and the field,
because battle files are large and hand-edited often enough that "invalid
input" alone is useless.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "TIE_WINNERS",
    "WINNERS",
    "Battle",
    "BattleFormatError",
    "load_battles",
    "write_battles",
]

#: Every accepted value of ``Battle.winner``.
WINNERS: tuple[str, ...] = ("model_a", "model_b", "tie", "tie (bothbad)")
#: The winner values that count as a draw (score 0.5 for each side).
TIE_WINNERS: frozenset[str] = frozenset({"tie", "tie (bothbad)"})

# Keys that map onto Battle attributes rather than into ``extra``.
_RESERVED = frozenset({"prompt_id", "model_a", "model_b", "winner", "judge"})


class BattleFormatError(ValueError):
    """Invalid battle data.

    ``path``, ``line`` (1-based) and ``field`` are set when known and are also
    part of the message, e.g. ``battles.jsonl:12: field 'winner': ...``.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | os.PathLike[str] | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.reason = message
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        where = ""
        if self.path is not None:
            where = self.path + (f":{line}" if line is not None else "") + ": "
        elif line is not None:
            where = f"line {line}: "
        what = f"field {field!r}: " if field is not None else ""
        super().__init__(where + what + message)

    def located(self, path: str | os.PathLike[str], line: int | None) -> BattleFormatError:
        """Return a copy of this error that also names the file and line."""
        return BattleFormatError(self.reason, path=path, line=line, field=self.field)


def _check_name(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BattleFormatError(
            f"expected a non-empty string, got {value!r}", field=name
        )
    return value


@dataclass(frozen=True)
class Battle:
    """One pairwise judgement between ``model_a`` and ``model_b``.

    Validated on construction: model names are non-empty strings and differ,
    ``winner`` is one of ``WINNERS``.  ``prompt_id`` is stored as a string (so
    FastChat's integer ``question_id`` 7 becomes ``"7"``) or ``None``.
    """

    prompt_id: str | None
    model_a: str
    model_b: str
    winner: str
    judge: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_name(self.model_a, "model_a")
        _check_name(self.model_b, "model_b")
        if self.model_a == self.model_b:
            raise BattleFormatError(
                f"a model cannot battle itself (model_a == model_b == {self.model_a!r})",
                field="model_b",
            )
        if self.winner not in WINNERS:
            raise BattleFormatError(
                f"invalid value {self.winner!r}; expected one of {list(WINNERS)}",
                field="winner",
            )
        pid = self.prompt_id
        if pid is not None:
            if isinstance(pid, bool) or not isinstance(pid, (str, int)):
                raise BattleFormatError(
                    f"expected a string, an integer or null, got {pid!r}",
                    field="prompt_id",
                )
            if isinstance(pid, int):
                object.__setattr__(self, "prompt_id", str(pid))
        if self.judge is not None and not isinstance(self.judge, str):
            raise BattleFormatError(
                f"expected a string or null, got {self.judge!r}", field="judge"
            )
        if not isinstance(self.extra, dict):
            raise BattleFormatError(
                f"expected a dict, got {type(self.extra).__name__}", field="extra"
            )
        clash = _RESERVED.intersection(self.extra)
        if clash:
            raise BattleFormatError(
                f"extra must not contain reserved keys {sorted(clash)}", field="extra"
            )

    @property
    def is_tie(self) -> bool:
        """True for ``"tie"`` and ``"tie (bothbad)"``."""
        return self.winner in TIE_WINNERS

    @property
    def score_a(self) -> float:
        """Model A's score: 1 for a win, 0.5 for any tie, 0 for a loss."""
        return 1.0 if self.winner == "model_a" else 0.0 if self.winner == "model_b" else 0.5

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> Battle:
        """Build a battle from a FastChat/LMArena-style mapping.

        ``prompt_id`` is taken from ``"prompt_id"`` or, failing that, from
        FastChat's ``"question_id"``; keys not consumed go to ``extra``.
        """
        if not isinstance(record, Mapping):
            raise BattleFormatError(
                f"expected a JSON object, got {type(record).__name__}", field=None
            )
        for key in ("model_a", "model_b", "winner"):
            if key not in record:
                raise BattleFormatError("missing required field", field=key)
        id_key = "prompt_id" if "prompt_id" in record else (
            "question_id" if "question_id" in record else None
        )
        consumed = {"model_a", "model_b", "winner", "judge"}
        if id_key is not None:
            consumed.add(id_key)
        extra = {k: v for k, v in record.items() if k not in consumed}
        try:
            return cls(
                prompt_id=record.get(id_key) if id_key else None,
                model_a=record["model_a"],
                model_b=record["model_b"],
                winner=record["winner"],
                judge=record.get("judge"),
                extra=extra,
            )
        except BattleFormatError as err:
            if id_key == "question_id" and err.field == "prompt_id":
                raise BattleFormatError(err.reason, field="question_id") from None
            raise

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written by ``write_battles`` (``judge`` omitted if None)."""
        out: dict[str, Any] = {
            "prompt_id": self.prompt_id,
            "model_a": self.model_a,
            "model_b": self.model_b,
            "winner": self.winner,
        }
        if self.judge is not None:
            out["judge"] = self.judge
        out.update(self.extra)
        return out


def _iter_json_array(text: str, path: Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(line, element)`` for each element of a top-level JSON array.

    ``json.loads`` loses positions, so the array is walked with
    ``raw_decode`` to report the line on which each element starts.
    """
    decoder = json.JSONDecoder()
    n = len(text)
    line, counted = 1, 0

    def line_at(pos: int) -> int:
        nonlocal line, counted
        line += text.count("\n", counted, pos)
        counted = pos
        return line

    def skip_ws(pos: int) -> int:
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        return pos

    def fail(pos: int, msg: str) -> BattleFormatError:
        return BattleFormatError(msg, path=path, line=line_at(pos))

    pos = skip_ws(text.index("[") + 1)
    if pos < n and text[pos] == "]":
        pos = skip_ws(pos + 1)
        if pos != n:
            raise fail(pos, "invalid JSON: unexpected data after the top-level array")
        return
    while True:
        if pos >= n:
            raise fail(pos, "invalid JSON: unterminated array")
        try:
            obj, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as err:
            raise BattleFormatError(
                f"invalid JSON: {err.msg} (column {err.colno})", path=path, line=err.lineno
            ) from None
        yield line_at(pos), obj
        pos = skip_ws(end)
        if pos < n and text[pos] == ",":
            pos = skip_ws(pos + 1)
            continue
        if pos < n and text[pos] == "]":
            pos = skip_ws(pos + 1)
            if pos != n:
                raise fail(pos, "invalid JSON: unexpected data after the top-level array")
            return
        raise fail(pos, "invalid JSON: expected ',' or ']' in the top-level array")


def _iter_jsonl(text: str, path: Path) -> Iterator[tuple[int, Any]]:
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            yield lineno, json.loads(raw)
        except json.JSONDecodeError as err:
            raise BattleFormatError(
                f"invalid JSON: {err.msg} (column {err.colno})", path=path, line=lineno
            ) from None


def _load_parquet(p: Path) -> list[Battle]:
    """Battles from a parquet file (one row per battle; errors name the 1-based row)."""
    import pyarrow.parquet as pq

    battles: list[Battle] = []
    for batch in pq.ParquetFile(p).iter_batches(batch_size=65536):
        for row, record in enumerate(batch.to_pylist(), start=len(battles) + 1):
            record = {k: v for k, v in record.items() if v is not None or k in ("model_a", "model_b", "winner")}
            try:
                battles.append(Battle.from_dict(record))
            except BattleFormatError as err:
                raise err.located(p, row) from None
    return battles


def load_battles(path: str | os.PathLike[str]) -> list[Battle]:
    """Read battles from a JSON Lines file, a JSON array file or a parquet file.

    The format is sniffed from the content (a file whose first non-blank
    character is ``[`` is a JSON array; parquet by its magic bytes, where the
    "line" of an error is the 1-based row), not from the extension.  Raises
    ``BattleFormatError`` naming the file, line and field on the first bad
    record: invalid JSON, a record that is not an object, a missing
    ``model_a``/``model_b``/``winner``, or an invalid value.
    """
    p = Path(path)
    with open(p, "rb") as fh:
        if fh.read(4) == b"PAR1":
            return _load_parquet(p)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise BattleFormatError(f"not UTF-8 text ({err.reason})", path=p) from None
    text = text.removeprefix("\ufeff")
    records = _iter_json_array(text, p) if text.lstrip().startswith("[") else _iter_jsonl(text, p)
    battles: list[Battle] = []
    for lineno, record in records:
        try:
            battles.append(Battle.from_dict(record))
        except BattleFormatError as err:
            raise err.located(p, lineno) from None
    return battles


def write_battles(path: str | os.PathLike[str], battles: Iterable[Battle]) -> None:
    """Write battles atomically: to a temporary file in the same folder, then
    ``os.replace`` onto ``path``, so readers never see a half-written file.

    A ``.json`` suffix writes one JSON array (one object per line inside it);
    anything else writes JSON Lines.  ``load_battles`` reads either back to
    equal ``Battle`` objects.
    """
    p = Path(path)
    lines = [json.dumps(b.to_dict(), ensure_ascii=False) for b in battles]
    if p.suffix.lower() == ".json":
        body = "[\n" + ",\n".join(lines) + "\n]\n" if lines else "[]\n"
    else:
        body = "".join(line + "\n" for line in lines)
    p.parent.mkdir(parents=True, exist_ok=True)
    try:  # mkstemp creates 0600 files; keep the old file's mode, else 0644
        mode = p.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(body)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
