"""``--data-root DIR``: every task of a run reads its data from its folder in a root of benchmark copies,
as ``--data TASK=DIR/FOLDER`` would. A task's folder is what its data source declares as ``data_dir``
(``aime/qwq``, ``math``, ...), else the task's name. ``--data TASK=PATH`` wins for its task. A task
with no folder under the root reads its usual source, with a one-line note; when that source is the
hub and the hub is offline, the run stops there instead, before any model loads."""
from __future__ import annotations

import sys
from pathlib import Path

from evalkit.taskapi import registry
from evalkit.util import hub_access
from evalkit.util.errors import ConfigError


def folder_of(name: str) -> str:
    """The folder of task ``name`` under a ``--data-root``."""
    return getattr(registry.get_task_class(name).dataset, "data_dir", None) or name


def hub_offline() -> str:
    """Why the hub cannot be used (empty: it can)."""
    if hub_access.offline_by_choice():
        return "HF_HUB_OFFLINE is set"
    return hub_access.unreachable() or ""


def resolve(names, root, given: dict, flag: str = "--data-root", data_flag: str = "--data") -> dict:
    """{task: its folder under ``root``} for the tasks in ``names`` that ``given`` (the explicit data
    paths) does not name and that have a folder there; a note for each other one (an error when it
    would need the hub and the hub is offline)."""
    base = Path(root)
    if not base.is_dir():
        raise ConfigError(f"{flag} {root}: {'is a file, not' if base.exists() else 'no such'} folder "
                          f"(give the root of the benchmark copies, e.g. ../shared/data)")
    out = {}
    for name in names:
        if name in given:
            continue
        folder = base / folder_of(name)
        if folder.exists():
            out[name] = str(folder)
            continue
        hub = getattr(registry.get_task_class(name).dataset, "hub_path", None)
        why = hub_offline() if hub else ""
        if why:
            raise ConfigError(f"{flag} {root}: task {name} has no folder {folder_of(name)} there and its usual "
                              f"source, the hub dataset {hub}, is offline ({why}); put its copy at {folder} or "
                              f"pass {data_flag} {name}=PATH")
        print(f"note: {flag} {root}: no folder {folder_of(name)} for task {name}; it reads "
              f"{'the hub dataset ' + hub if hub else 'its own default source'}", file=sys.stderr)
    return out
