"""Finding tasks: the built-in ``evalkit.tasks`` package, the ``evalkit.tasks`` entry-point group
(other installed packages add tasks there), ``--include-path`` folders of task files, and catalogs
of prefixed names (``lm-eval:NAME``, registered by ``evalkit.tasks.lm_eval_catalog``). A bare name
that is not an evalkit task but a catalog knows runs as the catalog's, with a one-line note."""
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
#: catalogs of prefixed task names: objects with ``prefix``, ``expand(name) -> [names]``,
#: ``task_class(name) -> type``, ``knows(name)``, ``suggest(name) -> [names]`` and ``include(path)``
_CATALOGS: list = []


def register_catalog(cat) -> None:
    if all(c.prefix != cat.prefix for c in _CATALOGS):
        _CATALOGS.append(cat)


def _catalog_of(name: str):
    load_builtin()
    return next((c for c in _CATALOGS if name.startswith(c.prefix)), None)


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
    load_builtin()
    p = Path(path)
    if not p.exists():
        raise ValueError(f"--include-path {path}: no such file or folder (give a folder of evalkit .py task files or "
                         f"of lm-eval YAML task configs, or one such file)")
    if any(c.include(path) for c in _CATALOGS):  # lm-eval YAML configs
        return
    files = [p] if p.is_file() and p.suffix == ".py" else sorted(p.glob("*.py")) if p.is_dir() else []
    if not files:
        raise ValueError(f"--include-path {path}: no evalkit .py task files and no lm-eval .yaml configs there")
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
    cat = _catalog_of(name)
    if cat is not None:
        return cat.task_class(name)
    if name not in tasks:
        raise _unknown(name, tasks)
    return tasks[name]


def _unknown(name: str, tasks) -> ValueError:
    import difflib
    close = difflib.get_close_matches(name, list(tasks), n=5)
    close += [s for c in _CATALOGS for s in c.suggest(name)][:3] if len(close) < 3 else []
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    more = "; `evalkit tasks --lm-eval [PATTERN]` lists lm-eval's" if _CATALOGS else ""
    return ValueError(f"unknown task {name!r}.{hint} Run `evalkit tasks` for the list{more}.")


def _from_catalog(name: str) -> Optional[list[str]]:
    """A bare name no evalkit task has, run as a catalog's (with a note), or None."""
    for c in _CATALOGS:
        if c.knows(name):
            print(f"note: {name!r} is not an evalkit task; running {c.prefix}{name}", file=sys.stderr)
            return c.expand(c.prefix + name)
    return None


def expand(names: Iterable[str]) -> list[str]:
    """Accept comma lists and glob patterns (``mmlu_*``)."""
    import fnmatch
    tasks = all_tasks()
    out: list[str] = []
    for n in names:
        for part in (x.strip() for x in n.split(",")):
            if not part:
                continue
            cat = _catalog_of(part)
            if cat is not None or (part not in tasks and not any(c in part for c in "*?[")):
                got = cat.expand(part) if cat is not None else _from_catalog(part)
                if got is None:
                    raise _unknown(part, tasks)
                out.extend(g for g in got if g not in out)
            elif any(c in part for c in "*?["):
                hits = fnmatch.filter(tasks, part)
                if not hits:
                    raise ValueError(f"task pattern {part!r} matches no task")
                out.extend(h for h in hits if h not in out)
            elif part not in out:
                get_task_class(part)
                out.append(part)
    return out
