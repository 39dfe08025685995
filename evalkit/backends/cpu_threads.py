"""How many threads torch computes with on CPU: the cores that are really free, not every core.

torch's default is one OpenMP thread per core of the machine. Beside other busy processes (a second
evaluation, a test worker, an engine) each of those threads spins at every barrier on a core another
process holds, and the threads wait for each other: BFCL at ``--limit 2`` took 212 s wall and 177 s
CPU beside other torch processes against 26.5 s and 20 s with one thread, same answers
(``bench/bench_cpu_threads.py`` measures it). So ``threads="auto"`` (the default) takes the
smallest of

* the cores this process may run on (its affinity),
* its cgroup's CPU quota (``cpu.max``, a container's or a CI job's limit),
* the cores idle over a short look at ``/proc/stat`` (other processes' work),

at least 1; and ``OMP_WAIT_POLICY=PASSIVE`` (in force while the HF backend loads torch, unless the
user set a policy; never left in the environment, so vLLM's engines, which bind their threads to
cores, keep spinning) makes waiting threads sleep instead of spin. ``threads=N`` (``--model-args``) or
``EVALKIT_TORCH_THREADS`` overrides it. The choice and its reasons go into the run record.
"""
from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from typing import Optional


@dataclass(frozen=True)
class ThreadChoice:
    threads: int
    source: str  # "model-args", "EVALKIT_TORCH_THREADS" or "auto"
    affinity: Optional[int] = None
    cgroup_quota: Optional[float] = None
    idle_cores: Optional[float] = None
    omp_wait_policy: Optional[str] = None

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}


def affinity_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cgroup_quota(path: str = "/sys/fs/cgroup/cpu.max") -> Optional[float]:
    """Cores the cgroup (v2) may use, e.g. 1.5 for ``150000 100000``; None without a limit."""
    try:
        with open(path) as f:
            quota, period = f.read().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        return None


def _cpu_times() -> Optional[tuple[int, int]]:
    """(idle + iowait, total) jiffies over all CPUs, from /proc/stat."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return fields[3] + (fields[4] if len(fields) > 4 else 0), sum(fields[:8])


def idle_cores(window: float = 0.2) -> Optional[float]:
    """Cores idle over ``window`` seconds (machine-wide), or None where /proc/stat can't tell."""
    a = _cpu_times()
    time.sleep(window)
    b = _cpu_times()
    if a is None or b is None or b[1] <= a[1]:
        return None
    return (os.cpu_count() or 1) * (b[0] - a[0]) / (b[1] - a[1])


def choose_threads(requested=None) -> ThreadChoice:
    """The thread count for torch on CPU, and why (see the module's docstring)."""
    policy = wait_policy()
    if requested not in (None, "", "auto"):
        return ThreadChoice(max(1, int(requested)), "model-args", omp_wait_policy=policy)
    env = os.environ.get("EVALKIT_TORCH_THREADS")
    if env and env != "auto":
        return ThreadChoice(max(1, int(env)), "EVALKIT_TORCH_THREADS", omp_wait_policy=policy)
    cores, quota, idle = affinity_cores(), cgroup_quota(), idle_cores()
    n = cores
    if quota is not None:
        n = min(n, max(1, math.floor(quota)))
    if idle is not None:
        n = min(n, max(1, math.floor(idle + 0.25)))  # a core 75% idle counts as free
    return ThreadChoice(max(1, n), "auto", cores, quota, None if idle is None else round(idle, 2), policy)


_POLICY: list = []  # the wait policy torch's OpenMP runtime started with, when this module imported torch


def import_torch_waiting_passively():
    """``import torch`` with ``OMP_WAIT_POLICY=PASSIVE`` (sleeping, not spinning, idle OpenMP threads)
    unless the user set a policy or torch is loaded already. The OpenMP runtime reads it once, as torch
    loads; the variable is then removed again, so processes started later (vLLM's engines, which bind
    their threads to cores and want them spinning) never inherit it."""
    if "torch" in sys.modules or "OMP_WAIT_POLICY" in os.environ:
        import torch
        return torch
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        import torch
    finally:
        del os.environ["OMP_WAIT_POLICY"]
    _POLICY.append("PASSIVE")
    return torch


def wait_policy() -> Optional[str]:
    """The OpenMP wait policy in force for this process's torch, as far as evalkit knows."""
    return _POLICY[0] if _POLICY else os.environ.get("OMP_WAIT_POLICY")
