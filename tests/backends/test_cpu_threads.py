"""The HF backend's CPU thread choice (``evalkit/backends/cpu_threads.py``): the cores really free,
unless the user says; recorded in the run record."""
from __future__ import annotations

import os
import subprocess
import sys
import time

from evalkit.backends import cpu_threads as ct


def test_an_explicit_count_wins(monkeypatch):
    monkeypatch.setenv("EVALKIT_TORCH_THREADS", "3")
    assert ct.choose_threads(5).to_dict()["threads"] == 5
    assert ct.choose_threads(5).source == "model-args"
    c = ct.choose_threads(None)
    assert (c.threads, c.source) == (3, "EVALKIT_TORCH_THREADS")


def test_cgroup_quota_is_read(tmp_path):
    f = tmp_path / "cpu.max"
    f.write_text("150000 100000\n")
    assert ct.cgroup_quota(str(f)) == 1.5
    f.write_text("max 100000\n")
    assert ct.cgroup_quota(str(f)) is None
    assert ct.cgroup_quota(str(tmp_path / "missing")) is None


def test_auto_never_exceeds_the_affinity_or_the_quota(monkeypatch):
    monkeypatch.delenv("EVALKIT_TORCH_THREADS", raising=False)
    monkeypatch.setattr(ct, "cgroup_quota", lambda path=None: 1.2)
    c = ct.choose_threads("auto")
    assert c.source == "auto" and c.threads == 1 and c.cgroup_quota == 1.2
    assert 1 <= c.threads <= ct.affinity_cores()


def test_auto_leaves_the_cores_a_busy_neighbour_holds(monkeypatch):
    """A process spinning on every core but one: auto takes what is idle, at least one thread."""
    monkeypatch.delenv("EVALKIT_TORCH_THREADS", raising=False)
    monkeypatch.setattr(ct, "cgroup_quota", lambda path=None: None)
    cores = ct.affinity_cores()
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(cores)]
    try:
        time.sleep(0.5)
        c = ct.choose_threads(None)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    assert c.threads == 1 and c.idle_cores is not None and c.idle_cores < cores - 0.5, c


def test_the_wait_policy_is_the_users_and_is_recorded_not_set(monkeypatch):
    """evalkit never sets OMP_WAIT_POLICY (passive waiting cost a quiet machine ~40 % and gained nothing
    beside a neighbour, bench/bench_cpu_threads.py); a policy the user set is recorded with the choice."""
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert ct.wait_policy() is None and "omp_wait_policy" not in ct.choose_threads(2).to_dict()
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    assert ct.choose_threads(2).to_dict() == {"threads": 2, "source": "model-args", "omp_wait_policy": "PASSIVE"}
