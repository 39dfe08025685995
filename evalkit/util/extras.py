"""Which pip extra brings which optional import, so a slim install fails with one clear line.

``pip install evalkit-harness`` alone gives compare, gate on a saved candidate run, power, score
for metrics that need no model, arena rate, cache and log tools. Everything heavier is an extra;
``evalkit.cli.main`` turns a ``ModuleNotFoundError`` for one of these modules into
``... needs the 'hf' extra: pip install 'evalkit-harness[hf]'`` instead of a traceback.
"""
from __future__ import annotations

import importlib

DIST = "evalkit-harness"

# top-level module -> the extra that installs it
EXTRA_OF = {
    "torch": "hf", "transformers": "hf", "accelerate": "hf", "gguf": "hf",
    "vllm": "vllm", "ray": "ray",
    "datasets": "eval", "pyseccomp": "eval", "seccomp": "eval",
    "sacrebleu": "metrics", "rouge_score": "metrics", "math_verify": "metrics", "evaluate": "metrics",
    "sympy": "metrics", "antlr4": "metrics", "latex2sympy2_extended": "metrics",
    "huggingface_hub": "hub",
    "mlflow": "mlflow", "wandb": "wandb",
    "streamlit": "dashboard", "altair": "dashboard",
    "inspect_ai": "inspect",
    "tree_sitter": "bfcl", "tree_sitter_java": "bfcl", "tree_sitter_javascript": "bfcl",
}


class MissingExtra(RuntimeError):
    """An optional dependency is not installed; the message names the extra to install."""


def install_source() -> str | None:
    """Where this evalkit was installed from, when not from an index (PEP 610's ``direct_url.json``):
    a local folder (``-e FOLDER`` when editable), a wheel or sdist file, or a VCS URL (``git+URL@rev``)."""
    import json
    from importlib.metadata import PackageNotFoundError, distribution
    try:
        text = distribution(DIST).read_text("direct_url.json")
    except PackageNotFoundError:
        text = None
    if not text:
        return _source_tree()
    try:
        d = json.loads(text)
    except ValueError:
        return None
    url = d.get("url") or ""
    if "vcs_info" in d:
        rev = d["vcs_info"].get("requested_revision")
        return f"git+{url}" + (f"@{rev}" if rev else "")
    path = url.removeprefix("file://")
    return f"-e {path}" if (d.get("dir_info") or {}).get("editable") else path or None


def _source_tree() -> str | None:
    """``-e CLONE`` when this evalkit is imported straight from a clone (PYTHONPATH, a legacy develop
    install without PEP 610 metadata): the folder above the package holds evalkit's pyproject.toml."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return f"-e {root}" if f'name = "{DIST}"' in text else None


def install_hint(extra: str) -> str:
    """The pip line that adds ``extra`` to this installation: from PyPI by name, or, while the name is
    not published, from where this copy came from (its clone, its wheel, its git URL)."""
    src = install_source()
    if src is None:
        return f"pip install '{DIST}[{extra}]'"
    if src.startswith("git+"):
        return f"pip install '{DIST}[{extra}] @ {src}'"
    if src.startswith("-e "):
        return f"pip install -e '{src[3:]}[{extra}]'"
    return f"pip install '{src}[{extra}]'"


def message_for(module: str, what: str | None = None) -> str | None:
    """The one-line message for a missing ``module`` (None when it is not an optional dependency)."""
    root = (module or "").split(".")[0]
    extra = EXTRA_OF.get(root)
    if extra is None:
        return None
    need = f"{what} needs" if what else "this command needs"
    return f"{need} the Python package {root!r} (the {extra!r} extra): {install_hint(extra)}"


def import_failure(e: ImportError) -> str | None:
    """The one-line message for an import that failed inside an installed third-party package (Inspect
    missing one of its own dependencies, say): which package, what it lacks, how to fix it. None when
    evalkit's own code is the importer (then it is a bug, with its traceback)."""
    missing = (e.name or "").split(".")[0]
    known = message_for(missing)
    if known is not None:
        return known
    importer = None
    tb = e.__traceback__
    while tb is not None:  # the deepest frame outside importlib is the module that imported it
        name = tb.tb_frame.f_globals.get("__name__", "") or ""
        if not name.startswith(("importlib", "_frozen_importlib")):
            importer = name
        tb = tb.tb_next
    top = (importer or "").split(".")[0]
    if not top or top == "evalkit" or not missing:
        return None
    extra = EXTRA_OF.get(top)
    fix = f"pip install {missing}" + (f", or reinstall the {extra!r} extra: {install_hint(extra)}" if extra else
                                      " (or rerun scripts/install.sh)")
    return (f"the installed package {top!r} cannot be imported: it needs the Python package {missing!r}, "
            f"which is missing ({type(e).__name__}: {e}); {fix}")


def require(module: str, what: str):
    """Import ``module`` or raise ``MissingExtra`` naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name and e.name.split(".")[0] == module.split(".")[0]:
            raise MissingExtra(message_for(module, what) or f"{what} needs {module}") from None
        raise
