"""Finding tasks: the built-in ``evalkit.tasks`` package, the ``evalkit.tasks`` entry-point group
(other installed packages add tasks there) and ``--include-path`` folders of task files."""
from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Iterable, Optional

from evalkit.taskapi.task import _REGISTRY

_loaded = False


def _import_package(pkg_name: str) -> None:
    pkg = importlib.import_module(pkg_name)
    for info in pkgutil.iter_modules(getattr(pkg, "__path__", [])):
        if not info.name.startswith("_"):
            importlib.import_module(f"{pkg_name}.{info.name}")


def load_builtin() -> None:
    global _loaded
    if _loaded:
        return
    _import_package("evalkit.tasks")
    for ep in entry_points(group="evalkit.tasks"):
        if ep.value == "evalkit.tasks":
            continue
        mod = ep.load()
        if hasattr(mod, "__path__"):
            _import_package(mod.__name__)
    _loaded = True


def include_path(path: str) -> None:
    """Import every ``*.py`` file in a folder (or one file) so its @register_task classes register."""
    p = Path(path)
    files = [p] if p.is_file() else sorted(p.glob("*.py"))
    if not files:
        raise ValueError(f"--include-path {path}: no .py task files found")
    for f in files:
        mod_name = f"evalkit_user_tasks.{f.stem}"
        spec = importlib.util.spec_from_file_location(mod_name, f)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = mod
        spec.loader.exec_module(mod)


def all_tasks() -> dict[str, type]:
    load_builtin()
    return dict(sorted(_REGISTRY.items()))


def get_task_class(name: str) -> type:
    tasks = all_tasks()
    if name not in tasks:
        import difflib
        close = difflib.get_close_matches(name, list(tasks), n=5)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise ValueError(f"unknown task {name!r}.{hint} Run `evalkit tasks` for the list.")
    return tasks[name]


def expand(names: Iterable[str]) -> list[str]:
    """Accept comma lists and glob patterns (``mmlu_*``)."""
    import fnmatch
    tasks = all_tasks()
    out: list[str] = []
    for n in names:
        for part in (x.strip() for x in n.split(",")):
            if not part:
                continue
            if any(c in part for c in "*?["):
                hits = fnmatch.filter(tasks, part)
                if not hits:
                    raise ValueError(f"task pattern {part!r} matches no task")
                out.extend(h for h in hits if h not in out)
            elif part not in out:
                get_task_class(part)
                out.append(part)
    return out
