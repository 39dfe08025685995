"""The verifier's version hash: a parity certificate between a training log and an evaluation.

``verifier_hash(task)`` hashes the source of everything that decides a verdict for ``task`` (its
task module and base classes, answer extraction and matching, the sandbox, ``evalkit.rl``'s
bridge, gold parsing and guards) and the versions of the packages that judge (math-verify, sympy,
latex2sympy2_extended, antlr4). Two processes with the same hash give the same verdict on the same
(gold, completion, options). The run record carries it per task (``tasks.<name>.verifier_hash``)
and every reward adapter logs it with its options.
"""
from __future__ import annotations

import hashlib
import inspect
import json
import sys
from functools import lru_cache
from importlib import metadata
from pathlib import Path

JUDGE_PACKAGES = ("math-verify", "sympy", "latex2sympy2_extended", "antlr4-python3-runtime")
_SHARED = ("evalkit.scoring.answers", "evalkit.scoring.choices", "evalkit.scoring.math_equivalence", "evalkit.scoring.passk", "evalkit.taskapi.task",
           "evalkit.taskapi.requests", "evalkit.sandbox.executor", "evalkit.sandbox.layers", "evalkit.sandbox.worker", "evalkit.rl.bridge",
           "evalkit.rl.gold", "evalkit.rl.guards", "evalkit.rl.verifier")


def _source(module_name: str) -> str:
    mod = sys.modules.get(module_name) or __import__(module_name, fromlist=["_"])
    path = getattr(mod, "__file__", None)
    return Path(path).read_text(encoding="utf-8") if path else ""


def _package_versions() -> dict:
    out = {}
    for p in JUDGE_PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = None
    return out


@lru_cache(maxsize=None)
def verifier_hash(task_name: str) -> str | None:
    """``evk-<16 hex>`` for a task evalkit.rl verifies, None for any other."""
    from evalkit.taskapi import registry
    from evalkit.rl.bridge import SCORING_TASK

    scoring = SCORING_TASK.get(task_name)
    if scoring is None:
        return None
    cls = registry.get_task_class(scoring)
    modules = sorted({c.__module__ for c in inspect.getmro(cls) if c.__module__.startswith("evalkit")})
    h = hashlib.sha256()
    for m in sorted(set(modules) | set(_SHARED)):
        h.update(m.encode() + b"\0" + _source(m).encode() + b"\0")
    h.update(json.dumps({"task": task_name, "scoring_task": scoring, "packages": _package_versions()},
                        sort_keys=True).encode())
    return "evk-" + h.hexdigest()[:16]
