"""The docs site builds with ``mkdocs build --strict``: a broken link, a missing anchor or a page left out
of the nav fails, as it fails the Pages workflow (.github/workflows/docs.yml)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO


def test_the_site_builds_strict_without_a_warning(tmp_path):
    pytest.importorskip("mkdocs")
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"),
                        "-d", str(tmp_path / "site")], cwd=REPO, capture_output=True, text=True, timeout=600)
    warnings = [line for line in p.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert p.returncode == 0 and warnings == [], p.stderr[-4000:]
    assert (tmp_path / "site" / "index.html").is_file() and (tmp_path / "site" / "getting-started" / "index.html").is_file()
