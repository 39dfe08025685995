"""The generated pages of ``docs/reference/``: the task catalog (``catalog``), the command-line
reference (``cli_page``) and the Python API page (``api_page``). ``python scripts/gen_docs.py`` writes
them and ``--check`` tells which checked-in page is stale; the output is deterministic (sorted, no
timestamps, no machine paths), so a rerun makes no diff."""
from __future__ import annotations

from pathlib import Path

FIX = "python scripts/gen_docs.py"


def render_all() -> dict[str, str]:
    """{file name: text} of every generated page."""
    from evalkit.reference import api_page, catalog, cli_page
    return {"api.md": api_page.render(), "cli.md": cli_page.render(), "tasks.md": catalog.render()}


def write(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name, text in render_all().items():
        (folder / name).write_text(text, encoding="utf-8")
        out.append(folder / name)
    return out


def stale(folder: Path) -> list[str]:
    """The pages in ``folder`` that differ from what the code generates now (missing ones included)."""
    out = []
    for name, text in render_all().items():
        path = folder / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            out.append(name)
    return out
