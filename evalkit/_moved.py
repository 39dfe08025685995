"""Import paths from before the folders (``evalkit.task``, ``evalkit.runner``, ...) keep working.

Task plugins, notebooks and scripts written against the flat layout import ``evalkit.task``,
``evalkit.stats`` or ``evalkit.records`` directly. Each old name resolves to the very module object
of its new home (so ``isinstance`` checks, monkeypatching and ``python -m`` see one module), without
a shim file per old name at the package root.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

MOVED = {
    "runner": "run.runner", "engine": "run.engine", "cache": "run.cache", "run_config": "run.config",
    "run_checks": "run.checks", "validation": "run.validation", "response_checks": "run.response_checks",
    "traces": "run.traces", "reward_phase": "run.reward_phase", "reward_pairs": "run.workflows.reward_pairs",
    "parity": "run.workflows.parity", "merge": "run.workflows.merge",
    "run.rescore": "run.workflows.rescore", "run.merge": "run.workflows.merge", "run.parity": "run.workflows.parity",
    "run.reward_pairs": "run.workflows.reward_pairs",
    "task": "taskapi.task", "items": "taskapi.items", "data": "taskapi.data", "registry": "taskapi.registry",
    "requests": "taskapi.requests",
    "stats": "scoring.stats", "metric": "scoring.metric", "answers": "scoring.answers",
    "math_equivalence": "scoring.math_equivalence", "choices": "scoring.choices", "passk": "scoring.passk",
    "thinking": "scoring.thinking", "budgets": "scoring.budgets", "best_of_n": "scoring.best_of_n",
    "step_agg": "scoring.step_agg", "metrics": "scoring", "metrics.text": "scoring.text_metrics",
    "metrics.hf_evaluate": "scoring.hf_evaluate",
    "record_schema": "records.schema", "provenance": "records.provenance", "redact": "records.redact",
    "jsonio": "util.jsonio", "errors": "util.errors", "extras": "util.extras", "fs_check": "util.fs_check",
    "kvargs": "util.kvargs", "hub_access": "util.hub_access", "models": "backends.model_dirs",
}


class _OldPath(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``import evalkit.OLD`` gives the module at ``evalkit.NEW``, keeping that module's own spec."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("evalkit.") or fullname[8:] not in MOVED:
            return None
        new = importlib.import_module("evalkit." + MOVED[fullname[8:]])
        spec = importlib.util.spec_from_loader(fullname, self, is_package=hasattr(new, "__path__"))
        spec.loader_state = (new, new.__spec__)
        return spec

    def create_module(self, spec):
        return spec.loader_state[0]

    def exec_module(self, module):
        # the import system stamped the old name's spec on the shared module: give it back its own
        module.__spec__ = module.__spec__.loader_state[1]


def install() -> None:
    if not any(isinstance(f, _OldPath) for f in sys.meta_path):
        sys.meta_path.insert(0, _OldPath())  # ahead of the path finder: evalkit.metrics.text must not load twice
