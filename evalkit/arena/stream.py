"""Read large battle files straight into a ``BattleTable``, chunk by chunk.

``read_battle_table(paths)`` reads JSON Lines, a JSON array or parquet (sniffed
from the content, as ``load_battles`` does) without building a Python object
per battle: JSON Lines and parquet go through pyarrow in blocks, keeping only
``model_a``, ``model_b``, ``winner`` and ``judge``, each dictionary-encoded so
that only the (few) distinct names are ever Python strings; a JSON array is
decoded element by element into the same arrays.  Memory stays at one block
plus ~9 bytes per battle.  The table equals ``as_table(load_battles(path))``.
With ``style=`` (style control) each battle's ``conv_metadata`` style ratios are read too, into
``table.style`` (``evalkit.arena.style_columns``; 8 more bytes per battle and feature).  For JSON
Lines only those style keys are parsed (their shape declared from the first block; other fields are
skipped, so they never send a file to the exact reader).  Limitation: a key that a style object first
shows after the first block is skipped too (pyarrow ignores undeclared keys at every depth); a row
lacking a key the first block shows goes to the exact reader.

Errors are ``BattleFormatError`` naming file, line and field, the same
messages ``load_battles`` gives: whenever the fast path meets anything it does
not accept, the file is read again by the exact line-by-line reader, which
either names the first bad line or (when only pyarrow was stricter, e.g. a
byte-order mark) returns the table.  For parquet the "line" is the 1-based row.
Unlike ``load_battles``, ``prompt_id``/``question_id`` values are not checked.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evalkit.records.provenance import file_sha256 as _digest

from .battles import Battle, BattleFormatError, load_battles
from .style_columns import BadValue, arrow_ratios, arrow_style_type, record_ratios
from .table import WINNER_CODES, BattleTable

__all__ = ["read_battle_table", "sniff_format"]

_FIELDS = ("model_a", "model_b", "winner")
_BLOCK_BYTES = 1 << 20


class _Reject(Exception):
    """The fast path cannot take this input; the exact reader decides."""


def sniff_format(path: str | os.PathLike[str]) -> str:
    """``"parquet"``, ``"json"`` (a top-level array) or ``"jsonl"``, from the first bytes."""
    with open(path, "rb") as fh:
        head = fh.read(4096)
    if head.startswith(b"PAR1"):
        return "parquet"
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    return "json" if text.startswith(b"[") else "jsonl"


class _Builder:
    """Model names -> indices in order of first appearance, and the arrays so far."""

    def __init__(self, style: tuple[str, ...] = ()) -> None:
        self.index: dict[str, int] = {}
        self.parts: list[tuple[np.ndarray, ...]] = []
        self.judges: dict[str, int] = {}
        self.style = style          # conv_metadata features to read as style ratios (empty: none)

    def intern(self, names_a: list, idx_a: np.ndarray, names_b: list, idx_b: np.ndarray):
        """Global indices for a chunk whose columns are dictionary-encoded."""
        map_a = np.array([self.index.get(n, -1) for n in names_a], dtype=np.int64)
        map_b = np.array([self.index.get(n, -1) for n in names_b], dtype=np.int64)
        if (map_a < 0).any() or (map_b < 0).any():
            first: dict[str, int] = {}
            for names, idx, mapped, side in ((names_a, idx_a, map_a, 0), (names_b, idx_b, map_b, 1)):
                ids, rows = np.unique(idx, return_index=True)
                for k, r in zip(ids.tolist(), rows.tolist()):
                    if mapped[k] < 0:
                        pos = 2 * r + side
                        first[names[k]] = min(pos, first.get(names[k], pos))
            for name in sorted(first, key=first.__getitem__):
                self.index[name] = len(self.index)
            map_a = np.array([self.index[n] for n in names_a], dtype=np.int64)
            map_b = np.array([self.index[n] for n in names_b], dtype=np.int64)
        return map_a[idx_a].astype(np.int32), map_b[idx_b].astype(np.int32)

    def add(self, a: np.ndarray, b: np.ndarray, w: np.ndarray, style: np.ndarray | None = None) -> None:
        self.parts.append((a, b, w) if style is None else (a, b, w, style))

    def count_judge(self, name: str, n: int = 1) -> None:
        self.judges[name] = self.judges.get(name, 0) + n

    def table(self, paths: tuple[str, ...], fingerprint: str, digests: dict[str, str]) -> BattleTable:
        cat = (lambda k, t: np.concatenate([p[k] for p in self.parts]) if self.parts else np.zeros(0, t))
        style = None
        if self.style:
            k = len(self.style) // 2
            style = np.concatenate([p[3] for p in self.parts]) if self.parts else np.zeros((0, k))
        return BattleTable(tuple(self.index), cat(0, np.int32), cat(1, np.int32), cat(2, np.int8),
                           judges=dict(self.judges), paths=paths, fingerprint=fingerprint, digests=digests,
                           style=style, style_elements=self.style)


# ---- arrow batches (JSON Lines and parquet) -------------------------------------------------------
def _encoded(col) -> tuple[list, np.ndarray]:
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        raise _Reject(0)
    enc = pc.dictionary_encode(col)
    return enc.dictionary.to_pylist(), enc.indices.fill_null(0).to_numpy(zero_copy_only=False)


def _first(idx: np.ndarray, bad: Iterable[int]) -> int:
    return int(np.flatnonzero(np.isin(idx, list(bad)))[0])


def _add_batch(batch, builder: _Builder) -> None:
    """Validate one arrow batch and append it; ``_Reject(row)`` names the first bad row."""
    for name in _FIELDS:
        if name not in batch.schema.names:
            raise _Reject(0)
        col = batch.column(name)
        if col.null_count:
            raise _Reject(int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0]))
    names_a, idx_a = _encoded(batch.column("model_a"))
    names_b, idx_b = _encoded(batch.column("model_b"))
    for names, idx in ((names_a, idx_a), (names_b, idx_b)):
        blank = [k for k, n in enumerate(names) if not n.strip()]
        if blank:
            raise _Reject(_first(idx, blank))
    wins, idx_w = _encoded(batch.column("winner"))
    bad = [k for k, v in enumerate(wins) if v not in WINNER_CODES]
    if bad:
        raise _Reject(_first(idx_w, bad))
    style = None
    if builder.style:
        try:
            style = arrow_ratios(batch, builder.style)
        except BadValue as bad:
            raise _Reject(bad.args[0]) from None
    a, b = builder.intern(names_a, idx_a, names_b, idx_b)
    same = np.flatnonzero(a == b)
    if len(same):
        raise _Reject(int(same[0]))
    codes = np.array([WINNER_CODES[v] for v in wins], dtype=np.int8)[idx_w]
    if "judge" in batch.schema.names:
        col = batch.column("judge")
        nulls = col.null_count
        if nulls < len(col):
            judges, idx_j = _encoded(col)
            counts = np.bincount(idx_j[~col.is_null().to_numpy(zero_copy_only=False)], minlength=len(judges))
            for j, c in zip(judges, counts.tolist()):
                if c:
                    builder.count_judge(j or "unknown", c)
        if nulls:
            builder.count_judge("unknown", nulls)
    else:
        builder.count_judge("unknown", len(codes))
    builder.add(a, b, codes, style)


def _arrow_jsonl(path: Path, builder: _Builder) -> None:
    import pyarrow as pa
    import pyarrow.json as pj

    if not hasattr(pj, "open_json"):
        raise _Reject(None)
    fields = [(f, pa.string()) for f in (*_FIELDS, "judge")]
    if builder.style:
        # style control: declare conv_metadata's style keys (their shape from the first block), so pyarrow
        # parses the battle columns and those keys only and skips every other field (conversations, tags)
        meta = arrow_style_type(_first_block(path), builder.style)
        if meta is None:
            raise _Reject(None)
        fields.append(("conv_metadata", meta))
    opts = pj.ParseOptions(explicit_schema=pa.schema(fields), unexpected_field_behavior="ignore")
    try:
        reader = pj.open_json(path, read_options=pj.ReadOptions(block_size=_BLOCK_BYTES), parse_options=opts)
        for batch in reader:
            _add_batch(batch, builder)
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeDecodeError):
        raise _Reject(None) from None


def _first_block(path: Path) -> list:
    """The records of the file's first block (whole lines), decoded by ``json``."""
    with open(path, "rb") as fh:
        data = fh.read(_BLOCK_BYTES)
        whole = len(data) < _BLOCK_BYTES or not fh.read(1)
    lines = data.removeprefix(b"\xef\xbb\xbf").split(b"\n")
    try:
        return [json.loads(x) for x in (lines if whole else lines[:-1]) if x.strip()]
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise _Reject(None) from None


def _parquet(path: Path, builder: _Builder, chunk_rows: int) -> None:
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    present = set(pf.schema_arrow.names)
    for key in _FIELDS:
        if key not in present:
            raise BattleFormatError("missing required field (no such column)", path=path, field=key)
    cols = [c for c in (*_FIELDS, "judge", *(("conv_metadata",) if builder.style else ())) if c in present]
    start = 0
    for batch in pf.iter_batches(batch_size=chunk_rows, columns=cols):
        try:
            _add_batch(batch, builder)
        except _Reject as bad:
            row = int(bad.args[0] or 0)
            record = batch.slice(row, 1).to_pylist()[0]
            try:
                Battle.from_dict(record)
            except BattleFormatError as err:
                raise err.located(path, start + row + 1) from None
            if builder.style and isinstance(bad_field := record_ratios(record, builder.style), str):
                raise _style_error(path, start + row + 1, None, bad_field) from None
            raise BattleFormatError("unsupported column type", path=path, line=start + row + 1) from None
        start += batch.num_rows


# ---- the exact reader (JSON arrays, and any file the fast path rejects) -------------------------------
def _records(path: Path) -> Iterator[tuple[int | None, Any]]:
    """``(line, record)`` for JSON Lines, ``(None, element)`` for a JSON array (streamed)."""
    with open(path, encoding="utf-8-sig") as fh:
        if sniff_format(path) == "jsonl":
            for lineno, raw in enumerate(fh, start=1):
                if raw.strip():
                    try:
                        yield lineno, json.loads(raw.removesuffix("\n"))
                    except json.JSONDecodeError as err:
                        raise BattleFormatError(f"invalid JSON: {err.msg} (column {err.colno})",
                                                path=path, line=lineno) from None
            return
        yield from ((None, x) for x in _array_elements(fh))


def _array_elements(fh) -> Iterator[Any]:
    decoder, buf, pos, eof = json.JSONDecoder(), "", 0, False

    def more() -> bool:
        nonlocal buf, pos, eof
        chunk = fh.read(1 << 22)
        buf, pos, eof = buf[pos:] + chunk, 0, not chunk
        return bool(chunk)

    def skip_ws():
        nonlocal pos
        while True:
            while pos < len(buf) and buf[pos] in " \t\r\n":
                pos += 1
            if pos < len(buf) or not more():
                return

    skip_ws()
    if buf[pos:pos + 1] != "[":
        raise _Reject(None)
    pos += 1
    skip_ws()
    if buf[pos:pos + 1] == "]":
        pos += 1
    else:
        while True:
            while True:
                try:
                    obj, end = decoder.raw_decode(buf, pos)
                    break
                except json.JSONDecodeError:
                    if eof or not more():
                        raise _Reject(None) from None
            if end == len(buf) and not eof and more():   # a number may continue in the next chunk
                continue
            pos = end
            yield obj
            skip_ws()
            sep = buf[pos:pos + 1]
            pos += 1
            if sep == "]":
                break
            if sep != ",":
                raise _Reject(None)
            skip_ws()
    skip_ws()
    if pos < len(buf):
        raise _Reject(None)


def _style_error(path: Path, line: int | None, element: int | None, field: str) -> BattleFormatError:
    where = "" if line is not None or element is None else f"battle #{element}: "
    return BattleFormatError(f"{where}style control needs a number (or an object of numbers) here; "
                             "missing or not a number", path=path, line=line, field=field)


def _exact(path: Path, builder: _Builder, chunk_rows: int) -> None:
    index = builder.index
    a: list[int] = []
    b: list[int] = []
    w: list[int] = []
    st: list[list[float]] = []

    def flush():
        style = np.array(st, dtype=np.float64).reshape(len(a), -1) if builder.style else None
        builder.add(np.array(a, dtype=np.int32), np.array(b, dtype=np.int32), np.array(w, dtype=np.int8), style)
        a.clear(), b.clear(), w.clear(), st.clear()

    try:
        for element, (lineno, rec) in enumerate(_records(path), start=1):
            try:
                ma, mb, win = rec["model_a"], rec["model_b"], rec["winner"]
                judge = rec.get("judge")
                pid = rec.get("prompt_id", rec.get("question_id"))
                ok = (type(ma) is str and type(mb) is str and ma != mb and ma.strip() and mb.strip()
                      and win in WINNER_CODES and (judge is None or type(judge) is str)
                      and (pid is None or type(pid) in (str, int)))
            except (TypeError, KeyError, AttributeError):
                ok = False
            if not ok:
                try:
                    Battle.from_dict(rec)
                except BattleFormatError as err:
                    if lineno is None:
                        raise _Reject(None) from None
                    raise err.located(path, lineno) from None
                raise _Reject(None)
            if builder.style:
                ratios = record_ratios(rec, builder.style)
                if isinstance(ratios, str):
                    raise _style_error(path, lineno, element, ratios)
                st.append(ratios)
            a.append(index.setdefault(ma, len(index)))
            b.append(index.setdefault(mb, len(index)))
            w.append(WINNER_CODES[win])
            builder.count_judge(judge or "unknown")
            if len(a) >= chunk_rows:
                flush()
    except UnicodeDecodeError as err:
        raise BattleFormatError(f"not UTF-8 text ({err.reason})", path=path) from None
    flush()


def read_battle_table(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
                      chunk_rows: int = 1 << 18, style: Sequence[str] = ()) -> BattleTable:
    """One ``BattleTable`` from one or more battle files, read in chunks.

    ``fingerprint`` is a hash of the files' SHA-256 digests in order; the
    digests themselves are in ``table.digests``.  ``style`` (LMArena's
    ``conv_metadata`` feature names, side A then side B, e.g.
    ``STYLE_CONTROL_ELEMENTS_V1``) also reads each battle's style ratios into
    ``table.style`` (n x k float64; see ``evalkit.arena.style_columns``)."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    builder, digests = _Builder(tuple(style)), {}
    for item in items:
        path = Path(item)
        digests[str(item)] = _digest(path)
        kind = sniff_format(path)
        mark = (len(builder.parts), dict(builder.index), dict(builder.judges))
        try:
            if kind == "parquet":
                _parquet(path, builder, chunk_rows)
                continue
            if kind == "jsonl":
                _arrow_jsonl(path, builder)
            else:
                _exact(path, builder, chunk_rows)
        except _Reject:
            del builder.parts[mark[0]:]
            builder.index, builder.judges = mark[1], mark[2]
            try:
                _exact(path, builder, chunk_rows)
            except _Reject:
                load_battles(path)        # names the line; a file it accepts is one we accept too
                raise BattleFormatError("could not read the battles", path=path) from None
    fingerprint = hashlib.sha256("\n".join(digests.values()).encode()).hexdigest()[:16]
    return builder.table(tuple(str(p) for p in items), fingerprint, digests)
