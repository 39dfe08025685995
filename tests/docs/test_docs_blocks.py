"""Docs that run: every fenced ``bash`` and ``python`` block of README.md and docs/ (not the generated
docs/reference/) runs here, page by page, in the page's order, on the bundled model with tiny limits
and the local benchmark copies. Blocks that are only shown are tagged ``console`` (shell), ``py``
(Python) or ``text``; data files take their format's tag. Any other tag fails (docs/contributing.md).

Each page runs in its own working folder, set up as a clone's root: ``results/``, the repository's
``tests/``, ``bench/`` and ``scripts/`` linked in, and ``../shared`` the benchmark copies beside the
clone. A block tagged ``python`` or ``yaml`` whose first line is ``# file: PATH`` is a file the page's
later commands use: it is saved at PATH (a Python one is then run with ``python PATH``)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mktestdocs import grab_code_blocks

from conftest import REPO, SHARED_DATA

RUN = {"bash", "python"}
SHOWN = {"console", "py", "text"}
DATA = {"toml", "yaml", "json", "jsonl", "jinja", "csv", "ini", "xml"}
SAVED_AS = re.compile(r"#\s*file:\s*(\S+)\s*\n")
LINKED = ("tests", "bench", "scripts")


def pages() -> list[Path]:
    docs = sorted(p for p in (REPO / "docs").rglob("*.md") if "reference" not in p.relative_to(REPO / "docs").parts)
    return [REPO / "README.md", *docs]


def fence_tags(text: str) -> list[str]:
    """The tag of each fenced block, in order, pairing fences as mktestdocs's grabber does (every line
    holding three backticks opens or closes a block)."""
    tags, inside = [], False
    for line in text.splitlines():
        if "```" in line:
            if not inside:
                tags.append(line.strip()[3:].strip())
            inside = not inside
    return tags


def blocks(page: Path) -> list[tuple[str, str]]:
    """(tag, code) of every fenced block of the page, in order."""
    text = page.read_text(encoding="utf-8")
    tags = fence_tags(text)
    codes = grab_code_blocks(text, lang=None)
    assert len(tags) == len(codes), f"{page.name}: an empty or unclosed fenced block"
    return list(zip(tags, codes))


def name(page: Path) -> str:
    return page.relative_to(REPO).as_posix()


@pytest.mark.parametrize("page", pages(), ids=name)
def test_every_block_is_tagged_to_run_or_to_show(page):
    bad = [(i, tag) for i, (tag, _) in enumerate(blocks(page)) if tag not in RUN | SHOWN | DATA]
    assert bad == [], (f"{name(page)}: blocks {bad}: tag a block bash or python to run it in the tests, "
                       f"console, py or text to show it, or with its data format ({', '.join(sorted(DATA))})")


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    """A folder that stands where a clone stands: ``shared`` beside the page folders, one response cache."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data {SHARED_DATA} is not available on this machine")
    root = tmp_path_factory.mktemp("docs")
    (root / "shared").symlink_to(SHARED_DATA.parent, target_is_directory=True)
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
           "EVALKIT_CACHE_DIR": str(root / "cache"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "OPENBLAS_NUM_THREADS": "1", "EVALKIT_TORCH_THREADS": os.environ.get("EVALKIT_TORCH_THREADS", "1"),
           "TRANSFORMERS_VERBOSITY": "error", "TOKENIZERS_PARALLELISM": "false"}
    env.pop("VIRTUAL_ENV", None)
    return root, env


def workdir(root: Path, page: Path) -> Path:
    work = root / name(page).replace("/", "_").removesuffix(".md")
    work.mkdir()
    (work / "results").mkdir()
    for d in LINKED:
        (work / d).symlink_to(REPO / d, target_is_directory=True)
    return work


def run_block(tag: str, code: str, work: Path, env: dict) -> subprocess.CompletedProcess:
    saved = SAVED_AS.match(code)
    if saved:
        path = work / saved.group(1)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code, encoding="utf-8")
        if tag != "python":
            return subprocess.CompletedProcess([], 0, "", "")
        argv = [sys.executable, str(path)]
    else:
        argv = ["bash", "-euo", "pipefail", "-c", code] if tag == "bash" else [sys.executable, "-c", code]
    return subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=600)


RUNNABLE = [p for p in pages() if any(t in RUN for t, _ in blocks(p))]


@pytest.mark.slow
@pytest.mark.parametrize("page", RUNNABLE, ids=name)
def test_the_pages_commands_run(page, sandbox):
    root, env = sandbox
    work = workdir(root, page)
    for i, (tag, code) in enumerate(blocks(page)):
        if tag in RUN or (tag in DATA and SAVED_AS.match(code)):
            p = run_block(tag, code, work, env)
            assert p.returncode == 0, (f"{name(page)}, block {i} ({tag}) exited {p.returncode}:\n{code}\n"
                                       f"--- stdout ---\n{p.stdout[-3000:]}\n--- stderr ---\n{p.stderr[-3000:]}")
