"""A τ²-bench domain as an agent ``ToolEnv``: the runtime text (``runtime_common.py`` followed by the
domain's tools, read as text and never imported) and the database file as its config; the agent's
tool schemas (``agent_tools.json``: τ²-bench's tool names, docstrings and parameter types)."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from evalkit.taskapi.agent import ToolEnv, canonical_json

HERE = Path(__file__).parent


@lru_cache(maxsize=4)
def runtime_source(domain: str) -> str:
    return (HERE / "runtime_common.py").read_text(encoding="utf-8") + "\n\n" + \
        (HERE / f"runtime_{domain}.py").read_text(encoding="utf-8")


def domain_env(domain: str, db_path) -> ToolEnv:
    """The domain's tools on a fresh copy of its database (each episode's own, in the sandbox)."""
    return ToolEnv(f"tau2:{domain}", runtime_source(domain), canonical_json({"db_path": str(db_path)}))


@lru_cache(maxsize=1)
def _schemas() -> dict:
    return json.loads((HERE / "agent_tools.json").read_text(encoding="utf-8"))


def agent_tools(domain: str) -> list:
    return _schemas()[domain]
