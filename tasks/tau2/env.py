"""A τ²-bench domain as an agent ``ToolEnv``: the runtime text (``runtime_common.py`` followed by the
domain's tools; telecom's own four, ``runtime_telecom*.py``, read as text and never imported) and
the database file as its config; the tool schemas (``agent_tools.json``: τ²-bench's tool names,
docstrings and parameter types; ``telecom_user``: the customer's phone tools).

Telecom's environment is per task: its config also holds the task's initial state (applied in the
sandbox before the conversation) and its env assertions (evaluated there on the final state)."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Optional

from evalkit.taskapi.agent import ToolEnv, canonical_json

HERE = Path(__file__).parent
RUNTIMES = {"telecom": ("runtime_telecom.py", "runtime_telecom_agent.py", "runtime_telecom_user.py",
                        "runtime_telecom_phone.py")}


@lru_cache(maxsize=4)
def runtime_source(domain: str) -> str:
    files = RUNTIMES.get(domain, ("runtime_common.py", f"runtime_{domain}.py"))
    return "\n\n".join((HERE / f).read_text(encoding="utf-8") for f in files)


def domain_env(domain: str, db_path, task: Optional[dict] = None, user_db_path=None) -> ToolEnv:
    """The domain's tools on a fresh copy of its database (each episode's own, in the sandbox); for
    telecom, with the customer's phone and ``task``'s initial state and env assertions."""
    config = {"db_path": str(db_path)}
    if domain in RUNTIMES:
        crit = (task or {}).get("evaluation_criteria") or {}
        config.update(user_db_path=str(user_db_path), initial_state=(task or {}).get("initial_state"),
                      assertions=crit.get("env_assertions"))
    return ToolEnv(f"tau2:{domain}", runtime_source(domain), canonical_json(config))


@lru_cache(maxsize=1)
def _schemas() -> dict:
    return json.loads((HERE / "agent_tools.json").read_text(encoding="utf-8"))


def agent_tools(domain: str) -> list:
    return _schemas()[domain]


def user_tools(domain: str) -> list:
    """The customer's own tools (τ²-bench's ``user_tools``; telecom only), else none."""
    return _schemas().get(f"{domain}_user", [])
