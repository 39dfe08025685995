"""A τ²-bench domain as an agent ``ToolEnv``: the runtime text (``runtime_common.py`` followed by the
domain's tools; telecom's own four, ``runtime_telecom*.py``, and banking_knowledge's eight,
``runtime_banking*.py``, read as text and never imported) and the database file as its config; the tool
schemas (``agent_tools.json``: τ²-bench's tool names, docstrings and parameter types; ``telecom_user``: the
customer's phone tools; banking's in ``banking_tools.json``, read by ``banking.py``).

Telecom's and banking's environments are per task: the config also holds the task's initial state (applied
in the sandbox before the conversation) and, for telecom, its env assertions (evaluated there on the final
state). Banking's runtime also gets its data file's text (``RUNTIME_DATA``) appended as ``DATA``."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Optional

from evalkit.taskapi.agent import ToolEnv, canonical_json

HERE = Path(__file__).parent
RUNTIMES = {"telecom": ("runtime_telecom.py", "runtime_telecom_agent.py", "runtime_telecom_user.py",
                        "runtime_telecom_phone.py"),
            "banking_knowledge": ("runtime_banking.py", "runtime_banking_db.py", "runtime_banking_agent.py",
                                  "runtime_banking_credit.py", "runtime_banking_accounts.py",
                                  "runtime_banking_debit.py", "runtime_banking_service.py",
                                  "runtime_banking_user.py")}


#: data the runtime reads as ``DATA`` (the sandbox sees no repository files: the text is appended to the source)
RUNTIME_DATA = {"banking_knowledge": "banking_discoverable.json"}


@lru_cache(maxsize=4)
def runtime_source(domain: str) -> str:
    files = RUNTIMES.get(domain, ("runtime_common.py", f"runtime_{domain}.py"))
    source = "\n\n".join((HERE / f).read_text(encoding="utf-8") for f in files)
    if domain in RUNTIME_DATA:
        text = json.dumps(json.loads((HERE / RUNTIME_DATA[domain]).read_text(encoding="utf-8")), ensure_ascii=False)
        source += f"\n\nDATA = json.loads({text!r})\n"
    return source


def domain_env(domain: str, db_path, task: Optional[dict] = None, user_db_path=None,
               retrieval: Optional[str] = None) -> ToolEnv:
    """The domain's tools on a fresh copy of its database (each episode's own, in the sandbox); for
    telecom, with the customer's phone and ``task``'s initial state and env assertions. The database
    files reach the sandbox as ``FILES`` (``db``, ``documents``), never by path; telecom's small TOML databases
    as JSON text in the config (``db``, ``user_db``)."""
    config: dict = {}
    files = [("db", str(db_path))]
    if domain == "banking_knowledge":  # the knowledge base beside the database; the task's initial state as
        # text (canonical_json sorts keys, and the records it adds keep their field order, as they are listed)
        files.append(("documents", str(Path(db_path).parent / "documents.json.gz")))
        config.update(retrieval=retrieval, initial_state=json.dumps((task or {}).get("initial_state"), ensure_ascii=False))
    elif domain in RUNTIMES:  # telecom's TOML databases, read here: the sandbox's Python may lack a TOML reader
        crit = (task or {}).get("evaluation_criteria") or {}
        files = []
        # as JSON text: the config's canonical JSON sorts keys, and the tools list records in file order
        config.update(db=json.dumps(_toml(db_path)), user_db=json.dumps(_toml(user_db_path)),
                      initial_state=(task or {}).get("initial_state"),
                      assertions=crit.get("env_assertions"))
    return ToolEnv(f"tau2:{domain}", runtime_source(domain), canonical_json(config), tuple(files))


@lru_cache(maxsize=4)
def _toml(path) -> dict:
    from evalkit.util import toml as tomllib
    with open(path, "rb") as f:
        return tomllib.load(f)


@lru_cache(maxsize=1)
def _schemas() -> dict:
    return json.loads((HERE / "agent_tools.json").read_text(encoding="utf-8"))


def agent_tools(domain: str) -> list:
    return _schemas()[domain]


def user_tools(domain: str) -> list:
    """The customer's own tools (τ²-bench's ``user_tools``; telecom only), else none."""
    return _schemas().get(f"{domain}_user", [])
