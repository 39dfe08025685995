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

at least 1. ``threads=N`` (``--model-args``) or ``EVALKIT_TORCH_THREADS`` overrides it. The choice,
its reasons and the user's ``OMP_WAIT_POLICY`` (if set) go into the run record.

The thread count is what helps; the OpenMP wait policy is left as the user has it. Measured with
``bench/bench_cpu_threads.py`` (2 cores, 8 prompts x 48 tokens, bench/RESULTS.md): beside a busy
torch process, torch's default took 29.7 s wall and 29.4 s CPU, ``auto`` 8.1 s and 5.8 s, and
``auto`` with ``OMP_WAIT_POLICY=PASSIVE`` 11.7 s and 8.0 s; on a quiet machine passive waiting gained
nothing either (6.4 s against 6.3 s), and in an earlier run it cost 8.1 s against 5.5 s.
"""
from __future__ import annotations

import math
import os
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


def wait_policy() -> Optional[str]:
    """The OpenMP wait policy the user set for this process (``OMP_WAIT_POLICY``), if any."""
    return os.environ.get("OMP_WAIT_POLICY") or None
