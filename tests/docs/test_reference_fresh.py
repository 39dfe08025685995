"""The generated reference pages (docs/reference/: task catalog, CLI, Python API) are what the code
generates now: a change to a task, a flag or a docstring that leaves them stale fails here, naming the
page and the command that regenerates it."""
from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass

from conftest import REPO

PAGES = REPO / "docs" / "reference"
SCRIPT = REPO / "scripts" / "gen_docs.py"
FIX = "python scripts/gen_docs.py"


def gen(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                          cwd=str(REPO), timeout=120)


def test_the_checked_in_reference_pages_are_fresh(tmp_path):
    r = gen("--out", tmp_path)
    assert r.returncode == 0, r.stderr
    fresh = sorted(p.name for p in tmp_path.iterdir())
    assert fresh == ["api.md", "cli.md", "tasks.md"]
    stale = [name for name in fresh if not (PAGES / name).is_file()
             or (PAGES / name).read_text(encoding="utf-8") != (tmp_path / name).read_text(encoding="utf-8")]
    assert not stale, f"docs/reference/{', docs/reference/'.join(stale)} stale: run `{FIX}` and commit the result"
    for name in fresh:  # nothing of this machine in them
        text = (tmp_path / name).read_text(encoding="utf-8")
        assert str(REPO) not in text and str(tmp_path) not in text and "site-packages" not in text, name


def test_check_names_the_stale_page_and_the_fix(tmp_path):
    # in a process of its own, as a user runs it: in a test worker the task registry also holds the
    # tasks other tests registered, and the catalog would differ
    shutil.copytree(PAGES, tmp_path / "pages")
    r = gen("--check", "--out", tmp_path / "pages")
    assert r.returncode == 0, r.stderr
    cli = tmp_path / "pages" / "cli.md"
    cli.write_text(cli.read_text(encoding="utf-8").replace("--data-root", "--data-rot"), encoding="utf-8")
    r = gen("--check", "--out", tmp_path / "pages")
    assert r.returncode == 1 and r.stderr.strip() == f"{cli}: stale; run `{FIX}`", r.stderr


def test_the_catalog_and_the_cli_page_say_what_the_code_does():
    tasks = (PAGES / "tasks.md").read_text(encoding="utf-8")
    assert "### `bbh_cot`" in tasks and "the first N items of every subtask" in tasks
    assert "- **licence**: Apache-2.0" in tasks and "- **licence**: not declared" in tasks
    assert "| `aime24` | `aime/qwq` |" in tasks  # model-card-2026's --data-root folders
    assert "`word_perplexity` ↓ (corpus)" in tasks
    cli = (PAGES / "cli.md").read_text(encoding="utf-8")
    assert "| `--data-root DIR` |  | read every task's data" in cli and "## `evalkit run`" in cli


def test_a_public_object_without_its_own_docstring_is_refused():
    from evalkit.reference import api_page

    @dataclass
    class Bare:
        x: int = 1
    assert api_page.own_docstring(Bare) == ""  # the dataclass's generated signature is not a docstring
    assert api_page.own_docstring(api_page.resolve("evalkit.taskapi.requests.GenParams"))
    api_page.check()  # every object the page names has one
