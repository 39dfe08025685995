"""lm-eval's catalog as evalkit sees it: its task index (13,000+ YAML configs, groups and tags, plus
the user's ``--include-path`` folders), names resolved and listed, nearest names suggested.

lm-eval is an optional extra (``pip install 'evalkit-harness[lm-eval]'``; it installs without torch).
Building lm-eval's index reads every YAML file (~15 s); evalkit keeps it under its cache folder
(``lm_eval_index/``, keyed by lm-eval's version and the include folders' files), so later runs load
it in ~1.5 s, and only when a name asks for lm-eval.
"""
from __future__ import annotations

import difflib
import fnmatch
from functools import lru_cache
from typing import Optional

from evalkit.util.errors import ConfigError

PREFIX = "lm-eval:"
#: lm-eval versions this adapter is tested with (its task API changed at 0.4.10 and 0.4.12)
SUPPORTED = ("0.4.13",)
_include_paths: list[str] = []


def require():
    """The imported ``lm_eval`` module, or a one-line error saying how to get it."""
    try:
        import lm_eval
    except ImportError:
        from evalkit.util.extras import install_hint
        raise ConfigError(f"lm-eval's tasks need the lm-eval package: {install_hint('lm-eval')} "
                          "(or pip install lm-eval; it installs without torch)") from None
    return lm_eval


def version() -> str:
    return getattr(require(), "__version__", "unknown")


def add_include_path(path: str) -> None:
    """A folder of the user's own lm-eval YAML task configs (lm-eval's ``--include_path``). Each file
    is read first: lm-eval skips a file it cannot read without a word, evalkit names it."""
    check_yaml_files(path)
    if path not in _include_paths:
        _include_paths.append(path)


def check_yaml_files(path: str) -> None:
    """A one-line error naming the file, line and problem of the first YAML config that does not read."""
    from pathlib import Path

    import yaml
    require()
    from lm_eval.tasks._yaml_loader import load_yaml
    p = Path(path)
    for f in ([p] if p.is_file() else sorted(p.rglob("*.yaml"))):
        try:
            cfg = load_yaml(f, resolve_func=False, recursive=True)
        except yaml.MarkedYAMLError as e:
            mark = e.problem_mark
            raise ConfigError(f"{f}:{mark.line + 1 if mark else '?'}: {e.problem or e} "
                              f"{('(' + e.context + ')') if e.context else ''}".rstrip()) from None
        except Exception as e:  # noqa: BLE001 (an include that is missing, a file that is not UTF-8)
            raise ConfigError(f"{f}: {type(e).__name__}: {e}") from None
        if not isinstance(cfg, dict) or not ({"task", "group", "include", "tag"} & set(cfg)):
            raise ConfigError(f"{f}: not an lm-eval task config (a mapping with a 'task' or 'group' key)")


def manager():
    """lm-eval's TaskManager over its own tasks and the include folders given so far."""
    return _manager(tuple(_include_paths))


@lru_cache(maxsize=4)
def _manager(include: tuple):
    require()
    import logging
    from unittest import mock

    from lm_eval.tasks import TaskManager
    from lm_eval.tasks._index import TaskIndex
    logging.getLogger("lm_eval").setLevel(logging.WARNING)  # its index logs every skipped YAML at INFO
    cached = _load_index(include)
    if cached is None:
        tm = TaskManager(include_path=list(include) or None)
        _save_index(include, tm.task_index)
        return tm
    with mock.patch.object(TaskIndex, "build", lambda self, paths, **kw: cached):
        return TaskManager(include_path=list(include) or None)


def _index_file(include: tuple):
    """Where lm-eval's index of these folders is kept: keyed by lm-eval's version and location and by
    each include folder's YAML files (names, sizes, modification times), so an edit rebuilds it."""
    import hashlib
    from pathlib import Path

    import lm_eval

    from evalkit.util.paths import default_cache_dir
    h = hashlib.sha256(f"{version()}|{Path(lm_eval.__file__).parent}".encode())
    for folder in include:
        for f in sorted(Path(folder).rglob("*.yaml")):
            st = f.stat()
            h.update(f"|{f}|{st.st_size}|{st.st_mtime_ns}".encode())
    return default_cache_dir() / "lm_eval_index" / f"{h.hexdigest()[:24]}.pickle"


def _load_index(include: tuple):
    import pickle
    path = _index_file(include)
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError):
        return None  # absent, or written by another lm-eval: built again


def _save_index(include: tuple, index: dict) -> None:
    import os
    import pickle
    path = _index_file(include)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(pickle.dumps(index, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache: the index is rebuilt next time


def bare(name: str) -> str:
    return name[len(PREFIX):] if name.startswith(PREFIX) else name


def kind(name: str) -> Optional[str]:
    """"task", "group", "tag" or None for an lm-eval name (with or without the ``lm-eval:`` prefix)."""
    entry = manager().task_index.get(bare(name))
    if entry is None:
        return None
    k = entry.kind.name
    return {"TASK": "task", "PY_TASK": "task", "GROUP": "group", "TAG": "tag"}.get(k)


def names(pattern: Optional[str] = None) -> list[tuple[str, str]]:
    """(name, kind) of every task, group and tag, sorted; ``pattern`` is a glob or a substring."""
    tm = manager()
    out = []
    for n in tm.all_tasks:
        if pattern and not (fnmatch.fnmatch(n, pattern) if any(c in pattern for c in "*?[") else pattern in n):
            continue
        out.append((n, kind(n) or "?"))
    return out


def suggest(name: str, n: int = 5) -> list[str]:
    """The nearest lm-eval names (prefixed), for an unknown name."""
    try:
        return [PREFIX + x for x in difflib.get_close_matches(bare(name), manager().all_tasks, n=n)]
    except ConfigError:
        return []


def unknown(name: str, evalkit_names=()) -> ConfigError:
    close = difflib.get_close_matches(bare(name), list(evalkit_names), n=3) + suggest(name, 3)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    return ConfigError(f"unknown task {name!r}.{hint} `evalkit tasks` lists evalkit's, "
                       f"`evalkit tasks --lm-eval [PATTERN]` lm-eval's")


def knows(name: str) -> bool:
    """Whether lm-eval (installed) has this name; False without lm-eval."""
    try:
        return bare(name) in manager().task_index
    except ConfigError:
        return False


def _members(n: str, seen: set) -> list[str]:
    entry = manager().task_index.get(n)
    if entry is None or n in seen:
        return [n]
    seen.add(n)
    k = kind(n)
    if k == "tag":
        return [m for t in sorted(entry.tags) for m in _members(t, seen)]
    if k == "group":
        cfg = entry.cfg or {}
        members = cfg.get("task")
        if not cfg.get("aggregate_metric_list") and isinstance(members, list) and all(isinstance(m, str) for m in members):
            return [m for t in members for m in _members(t, seen)]
    return [n]


def expand(name: str) -> list[str]:
    """``lm-eval:NAME`` as the evalkit tasks that run it: a task or an aggregating group is one; a tag
    or a group without aggregation is its members; a glob (``lm-eval:mmlu_*``) every match."""
    pattern = bare(name)
    if any(c in pattern for c in "*?["):
        hits = fnmatch.filter(manager().all_tasks, pattern)
        if not hits:
            raise ConfigError(f"task pattern {name!r} matches no lm-eval task")
    else:
        if pattern not in manager().task_index:
            raise unknown(name)
        hits = [pattern]
    out: list[str] = []
    for h in hits:
        for m in _members(h, set()):
            if PREFIX + m not in out:
                out.append(PREFIX + m)
    return out
