"""lm-eval's task catalog through evalkit's engine: ``evalkit run --tasks lm-eval:NAME``.

lm-eval's own task code builds the prompts, filters and scores (the optional ``lm-eval`` extra);
evalkit answers the requests (every backend, batched across tasks, cached, resumable) and reports
every figure with a CI. ``catalog`` finds names, ``local_data`` answers datasets from local files,
``leaf`` drives one lm-eval task, ``boundary`` converts requests and responses, ``metrics`` declares
the figures, ``task`` is the evalkit task. Importing this package does not import lm-eval.
"""
from evalkit.taskapi import registry

from . import catalog


class _Catalog:
    """What evalkit's task registry asks of a catalog of prefixed names."""

    prefix = catalog.PREFIX
    expand = staticmethod(catalog.expand)
    knows = staticmethod(catalog.knows)
    suggest = staticmethod(catalog.suggest)

    @staticmethod
    def task_class(name: str) -> type:
        from .task import task_class
        return task_class(name)

    @staticmethod
    def include(path: str) -> bool:
        """Take a folder of lm-eval YAML configs (``--include-path``); False when it holds none."""
        from pathlib import Path
        p = Path(path)
        if not (p.is_dir() and (any(p.rglob("*.yaml")) or any(p.rglob("*.yml")))) and p.suffix not in (".yaml", ".yml"):
            return False
        # lm-eval reads folders: a single config is read from its folder (with what else the folder holds)
        catalog.add_include_path(str(p.parent if p.is_file() else p))
        return True


registry.register_catalog(_Catalog)
