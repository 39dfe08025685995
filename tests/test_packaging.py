"""The installed package carries every subpackage and no generic top-level name."""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def test_every_subpackage_is_listed_and_tasks_live_inside_evalkit():
    conf = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(conf["packages"])
    found = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "evalkit").rglob("__init__.py")
             if "__pycache__" not in p.parts}
    assert found <= listed, f"add to pyproject packages: {sorted(found - listed)}"
    assert all(name == "evalkit" or name.startswith("evalkit.") for name in listed)
    assert conf["package-dir"]["evalkit.tasks"] == "tasks"
    for d in ("tasks", "judges", "dashboards"):
        assert (REPO / d / "__init__.py").exists()
