"""Finding and reading Inspect logs, with one-line errors that name the file.

A path given may be a log file (``.eval``, a zip, or ``.json``) or a folder, searched recursively
with Inspect's own listing (``list_eval_logs``: the logs ``inspect view`` shows). Reading goes
through ``inspect_ai.log.read_eval_log``; a log format version newer than the installed Inspect
reads (the version it writes) is refused, as are files that are not Inspect logs.
"""
from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from urllib.parse import unquote, urlparse

from evalkit.util.errors import EvalkitError
from evalkit.util.extras import require

LOG_SUFFIXES = (".eval", ".json")


def inspect_log_api():
    """``inspect_ai.log``, or a one-line error naming the ``inspect`` extra."""
    return require("inspect_ai.log", "reading and writing Inspect logs")


def max_log_version() -> int:
    """The newest log format version the installed Inspect reads: the one it writes."""
    try:
        return int(inspect_log_api().EvalLog.model_fields["version"].default)
    except (AttributeError, KeyError, TypeError, ValueError):  # a later Inspect changed it: trust its reader
        return 1 << 30


def inspect_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("inspect-ai")
    except PackageNotFoundError:
        return "?"


def _one_line(e: BaseException) -> str:
    errors = getattr(e, "errors", None)
    if callable(errors):  # pydantic: the first field that is wrong
        try:
            first = errors()[0]
            where = ".".join(str(x) for x in first.get("loc", ())) or "(top level)"
            return f"field {where!r}: {first.get('msg')}"
        except (IndexError, TypeError, AttributeError):
            pass
    text = " ".join(str(e).split()) or type(e).__name__
    return text[:300]


def _unknown_version(path: Path, version) -> EvalkitError:
    return EvalkitError(f"{path}: unknown Inspect log version {version} (this inspect-ai {inspect_version()} reads "
                        f"versions 1-{max_log_version()}; upgrade inspect-ai to read it)")


def declared_version(path: Path):
    """The format version a log says it has, read without Inspect (None when it cannot be found)."""
    try:
        if path.suffix == ".eval":
            with zipfile.ZipFile(path) as z:
                for name in ("header.json", "_journal/start.json"):
                    if name in z.namelist():
                        return json.loads(z.read(name)).get("version")
            return None
        with open(path, "rb") as f:  # Inspect writes "version" first
            m = re.search(rb'^\s*\{\s*"version"\s*:\s*(-?\d+)', f.read(256))
        return int(m.group(1)) if m else None
    except (OSError, ValueError, zipfile.BadZipFile, AttributeError):
        return None


def read_log(path, header_only: bool = False):
    """The ``EvalLog`` of one file (samples included unless ``header_only``)."""
    path = Path(path)
    api = inspect_log_api()
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    if path.suffix not in LOG_SUFFIXES:
        raise EvalkitError(f"{path}: not an Inspect log (expected a .eval or .json file)")
    try:
        log = api.read_eval_log(str(path), header_only=header_only)
    except Exception as e:  # noqa: BLE001 (Inspect's readers raise many kinds: one line naming the file)
        m = re.search(r"Unable to read version (\S+) of log format", str(e))
        declared = declared_version(path)
        if m or isinstance(declared, int) and not 1 <= declared <= max_log_version():
            raise _unknown_version(path, m.group(1) if m else declared) from None
        if callable(getattr(e, "errors", None)):
            kind = "not an Inspect log"
        else:
            kind = "a truncated or damaged .eval file" if path.suffix == ".eval" else "truncated or invalid JSON"
        raise EvalkitError(f"{path}: {kind} ({_one_line(e)})") from None
    version = getattr(log, "version", None)
    if not isinstance(version, int) or not 1 <= version <= max_log_version():
        raise _unknown_version(path, version)
    return log


def _listed(folder: Path) -> list[Path]:
    api = inspect_log_api()
    out = []
    for info in api.list_eval_logs(str(folder), recursive=True):
        name = str(info.name)
        out.append(Path(unquote(urlparse(name).path)) if name.startswith("file:") else Path(name))
    return sorted(out)


def find_logs(paths) -> list[Path]:
    """Every Inspect log under the given files and folders, in path order."""
    found = []
    for p in map(Path, paths):
        if p.is_file():
            found.append(p)
        elif p.is_dir():
            hits = _listed(p)
            if not hits:
                raise EvalkitError(f"{p}: no Inspect log (.eval, or .json named as Inspect names logs) in this folder")
            found += hits
        else:
            raise FileNotFoundError(f"{p}: no such file or folder")
    return found
