"""The README's test command (``-n 2 --dist loadgroup``) finishes when a worker dies.

With pytest-xdist 3.8.0's own scheduler this session hangs for ever after the first crash (CI then
stops at its limit with no summary): see ``tests/_xdist_crash_safe.py``."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

CASES = '''
import os, time, pytest

@pytest.mark.xdist_group("a")
def test_a1(): time.sleep(0.5)

@pytest.mark.xdist_group("a")
def test_a_crash(): os._exit(1)

@pytest.mark.xdist_group("a")
def test_a3(): pass

@pytest.mark.xdist_group("b")
def test_b1(): time.sleep(1)

@pytest.mark.xdist_group("b")
def test_b2(): pass

@pytest.mark.xdist_group("c")
def test_c_last_group_crashes(): os._exit(3)
'''

CONFTEST = '''
import pytest

@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from _xdist_crash_safe import CrashSafeLoadGroupScheduling
    return CrashSafeLoadGroupScheduling(config, log)
'''


def test_crashed_workers_fail_their_test_once_and_the_run_finishes(tmp_path):
    (tmp_path / "test_cases.py").write_text(CASES)
    (tmp_path / "conftest.py").write_text(CONFTEST)
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider",
                        "-p", "no:randomly", "-o", "addopts=", "-o", "timeout=0", "test_cases.py"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "2 failed, 4 passed" in out, out  # the two crashing tests once each; every other test ran
    assert "crashed while running 'test_cases.py::test_a_crash'" in out
    assert "crashed while running 'test_cases.py::test_c_last_group_crashes'" in out
