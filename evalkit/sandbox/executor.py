"""Parent side of evalkit's sandbox for model-written code (HumanEval/MBPP pass@k).

``Sandbox`` keeps a pool of long-lived worker processes (``worker.py``), each started once
inside the strongest isolation layer this host offers, found by a probe run:

1. ``bwrap``   -- bubblewrap: all namespaces unshared (no network), the worker as pid 1 of its
                  pid namespace (``--as-pid-1``: the kernel drops signals sent to it from
                  inside), read-only binds of /usr/lib*, /lib*, /usr/share and Python's prefix
                  (no /usr/bin, /bin: little to exec), private /tmp and /dev, *no* /proc,
                  ``--die-with-parent --new-session``, and a seccomp filter built here with
                  pyseccomp and loaded by bwrap (``--seccomp``).  As root we first drop to
                  uid 65534 with ``setpriv`` so bwrap runs unprivileged (a user namespace mapping
                  nobody to nobody, never to root).  When that fails (unprivileged user
                  namespaces blocked as by Ubuntu's AppArmor, or Python under an unreadable
                  /root) a root parent runs bwrap without a user namespace (``rootns``) and the
                  worker drops to 65534 itself before its first job.
2. ``unshare`` -- util-linux unshare: new net/pid/ipc/uts/mount namespaces, no fs isolation;
                  the worker's child applies Landlock and seccomp itself (via ctypes).
3. ``none``    -- only what the worker's child does itself (Landlock, seccomp, rlimits).

Every layer adds rlimits and runs programs under a PEP 578 audit hook (see ``worker.py``).
A layer weaker than bwrap, a missing seccomp binding or uid 0 is reported with
``warnings.warn`` and logging; ``Sandbox.isolation_layer`` records the layer for run records,
e.g. ``"bwrap+seccomp+rlimits+uid65534"``.

A pass is reported *positively*: the parent sends a fresh random token per job; only trusted
code in the child that runs after the program returned normally writes it back.  ``passed``
is true iff the exact token came back and the child exited 0.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import queue
import secrets
import select
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import warnings
import weakref
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from .layers import _ENV, _candidates, _Layer

log = logging.getLogger(__name__)

NONCE_LEN = 64  # must match worker.NONCE_LEN
_HDR = struct.Struct(">I")
Program = str | Mapping[str, str]  # a program, or {"program", "test", "entry_point"}


@dataclass(frozen=True)
class ExecResult:
    """Outcome of one program.  ``status`` is one of passed / failed / timeout / error
    (``error`` = the sandbox itself failed, e.g. a worker died, never the program's verdict)."""

    status: str
    passed: bool
    error_type: str | None = None
    error_message: str = ""
    stdout: str = ""
    stderr: str = ""
    duration: float = 0.0
    exit_code: int | None = None


class _WorkerGone(Exception):
    pass


class _NotStarted(_WorkerGone):
    pass


# ----------------------------------------------------------------------------- one worker
class _Spawner:
    """Starts processes from one long-lived daemon thread.  ``bwrap --die-with-parent`` and
    ``unshare --kill-child`` use PR_SET_PDEATHSIG, which fires when the *thread* that forked
    them exits -- a worker started from a short-lived pool thread would die with it."""

    def __init__(self):
        self._jobs: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def popen(self, *args, **kwargs) -> subprocess.Popen:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="evalkit-sandbox-spawner",
                                                daemon=True)
                self._thread.start()
        done = Future()
        self._jobs.put((args, kwargs, done))
        return done.result()

    def _loop(self) -> None:
        while True:
            args, kwargs, done = self._jobs.get()
            try:
                done.set_result(subprocess.Popen(*args, **kwargs))
            except BaseException as exc:  # handed to the caller
                done.set_exception(exc)


_spawner = _Spawner()


class _Worker:
    """One long-lived worker process and its length-prefixed JSON pipe protocol."""

    def __init__(self, layer: _Layer, allow_exec: bool = False):
        self.layer, self.allow_exec = layer, allow_exec
        self.proc: subprocess.Popen | None = None
        self.hello: dict = {}
        self._log = None
        self._pidfd: int | None = None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = 30.0) -> dict:
        self.kill()
        cmd = self.layer.command(os.path.realpath(sys.executable), self.allow_exec)
        self._log = tempfile.TemporaryFile()
        try:
            self.proc = _spawner.popen(cmd.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=self._log, env=dict(_ENV), pass_fds=cmd.pass_fds,
                                       start_new_session=True, bufsize=0, umask=0o022)
        except BaseException:
            if cmd.info_fd is not None:
                os.close(cmd.info_fd)
            raise
        finally:
            for fd in cmd.pass_fds:
                os.close(fd)
        deadline = time.monotonic() + timeout
        if cmd.info_fd is not None:
            self._pidfd = _worker_pidfd(cmd.info_fd, deadline)
        self.hello = self._recv(deadline)
        if self.hello.get("python") != sys.version:  # e.g. its launcher found another libpython
            raise _WorkerGone("worker runs Python %r, not ours" % self.hello.get("python"))
        return self.hello

    def call(self, job: dict, nonce: bytes, wait: float) -> dict:
        """Send one job and wait for its report.  Raises ``_NotStarted`` if the worker was gone
        before it acknowledged the job (safe to retry), ``_WorkerGone`` if it died running it."""
        body = json.dumps(job).encode()
        deadline = time.monotonic() + wait
        try:
            self.proc.stdin.write(_HDR.pack(len(body)) + body + nonce)
            if self._read(_HDR.size, deadline) != _HDR.pack(0):
                raise _WorkerGone("protocol error: no ack")
        except (_WorkerGone, OSError, ValueError, AttributeError) as exc:
            raise _NotStarted("worker unavailable: %s" % exc) from None
        return self._recv(deadline)

    def _recv(self, deadline: float) -> dict:
        hdr = self._read(_HDR.size, deadline)
        return json.loads(self._read(_HDR.unpack(hdr)[0], deadline))

    def _read(self, n: int, deadline: float) -> bytes:
        fd, buf = self.proc.stdout.fileno(), bytearray()
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise _WorkerGone("worker did not answer in time")
            chunk = os.read(fd, n - len(buf))
            if not chunk:
                raise _WorkerGone("worker exited: " + self.diagnostics())
            buf += chunk
        return bytes(buf)

    def diagnostics(self) -> str:
        if self._log is None:
            return ""
        try:
            self._log.seek(0)
            return self._log.read()[-2000:].decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""

    def kill(self) -> None:
        pidfd, self._pidfd = self._pidfd, None
        if pidfd is not None:  # the worker itself: dropping uid cleared its PDEATHSIG
            try:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            except OSError:
                pass
            os.close(pidfd)
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                stream.close()
        if self._log is not None:
            self._log.close()
            self._log = None


def _worker_pidfd(info_fd: int, deadline: float) -> int | None:
    """A pidfd for the sandboxed worker, from bwrap's --info-fd JSON ({"child-pid": N})."""
    data = b""
    try:
        while time.monotonic() < deadline and select.select([info_fd], [], [],
                                                            deadline - time.monotonic())[0]:
            chunk = os.read(info_fd, 4096)
            if not chunk:
                break
            data += chunk
            try:
                return os.pidfd_open(int(json.loads(data)["child-pid"]))
            except (ValueError, KeyError):
                continue  # not all of it yet
    except OSError:
        pass
    finally:
        os.close(info_fd)
    return None


# ----------------------------------------------------------------------------- detection
_detect_lock = threading.Lock()
_detected: dict[str, tuple[_Layer, str]] = {}


def _probe_job(**overrides) -> dict:
    job = {"program": "pass", "timeout": 10.0, "memory_mb": 512, "max_output_bytes": 4096,
           "max_file_bytes": 1 << 20, "max_open_files": 64, "max_procs": 32}
    job.update(overrides)
    return job


def _describe(layer: _Layer, hello: dict) -> str:
    parts = [layer.label]
    parts.append("seccomp" if hello.get("seccomp") else "no-seccomp")
    if hello.get("landlock"):
        parts.append("landlock%d" % hello["landlock"])
    parts += ["rlimits", "uid%d" % hello.get("uid", -1)]
    return "+".join(parts)


def _detect(forced: str | None) -> tuple[_Layer, str, _Worker | None]:
    """First candidate layer whose worker starts and passes a trivial program."""
    key = forced or "auto"
    with _detect_lock:
        if key in _detected:
            layer, desc = _detected[key]
            return layer, desc, None
        failures = []
        for layer in _candidates(forced):
            worker = _Worker(layer)
            try:
                worker.start(timeout=20.0)
                nonce = secrets.token_hex(NONCE_LEN // 2).encode()
                rep = worker.call(_probe_job(), nonce, wait=20.0)
                if rep.get("exit_code") == 0 and rep.get("report") == "PASS " + nonce.decode():
                    desc = _describe(layer, worker.hello)
                    _detected[key] = (layer, desc)
                    _report_weakness(layer, worker.hello, desc, failures)
                    return layer, desc, worker
                failures.append("%s: probe failed %s" % (layer.label, rep.get("stderr", "")[-300:]))
            except (_WorkerGone, OSError, ValueError) as exc:
                failures.append("%s: %s" % (layer.label, exc))
            worker.kill()
        raise RuntimeError("no sandbox layer works here:\n" + "\n".join(failures))


def _report_weakness(layer: _Layer, hello: dict, desc: str, failures: list[str]) -> None:
    if layer.name == "bwrap" and hello.get("seccomp") and hello.get("uid") != 0:
        if failures:
            log.info("sandbox: using %s (skipped: %s)", desc, "; ".join(failures))
        return
    msg = ("evalkit sandbox: WEAK ISOLATION for untrusted code: %s%s. Install bubblewrap and "
           "pyseccomp, allow unprivileged user namespaces, or run inside a VM/container."
           % (desc, (" (stronger layers failed: %s)" % "; ".join(failures)) if failures else ""))
    log.warning(msg)
    warnings.warn(msg, RuntimeWarning, stacklevel=3)


def isolation_layer(layer: str | None = None) -> str:
    """The isolation layer a ``Sandbox`` gets on this host (probed once per process), e.g.
    ``"bwrap+seccomp+rlimits+uid65534"``."""
    _, desc, worker = _detect(layer)
    if worker is not None:
        worker.kill()
    return desc


# ----------------------------------------------------------------------------- the pool
class Sandbox:
    """A pool of sandboxed workers; thread-safe; use as a context manager or call ``close()``.

    ``run(program)`` runs one program (prompt + completion + tests + ``check(entry_point)``);
    passing ``test=`` and ``entry_point=`` instead runs the candidate code and the tests apart:
    the tests then see pristine ``builtins`` and modules whatever the candidate did to them.

    Limits per program: ``timeout`` (wall clock; CPU time gets 2 s more), ``memory_mb`` of
    address space on top of the worker's own size, ``max_output_bytes`` kept of stdout and of
    stderr (tails; a program writing 16x that in total is killed), ``max_file_bytes`` per file,
    ``max_open_files``, ``max_procs`` (processes+threads of the sandbox uid).  ``layer`` (or
    ``$EVALKIT_SANDBOX_LAYER``) forces bwrap / unshare / none instead of the best available.
    ``allow_exec`` lets programs start other executables (off: the audit hook refuses every
    exec route, bwrap binds no /usr/bin, /bin, and the ctypes layers' seccomp refuses execve).
    """

    answer_grace = 10.0  # seconds past the job timeout before a silent worker is restarted

    def __init__(self, workers: int = 2, timeout: float = 10.0, memory_mb: int = 1024,
                 max_output_bytes: int = 64 * 1024, *, layer: str | None = None,
                 allow_exec: bool = False, max_procs: int = 32,
                 max_file_bytes: int = 16 << 20, max_open_files: int = 256):
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.timeout = float(timeout)
        self._limits = {"memory_mb": int(memory_mb), "max_output_bytes": int(max_output_bytes),
                        "max_file_bytes": int(max_file_bytes), "max_procs": int(max_procs),
                        "max_open_files": int(max_open_files), "allow_exec": bool(allow_exec)}
        self._layer, self.isolation_layer, first = _detect(layer or os.environ.get(
            "EVALKIT_SANDBOX_LAYER"))
        if first is not None and allow_exec:  # the probe worker refuses execve
            first.kill()
            first = None
        self._workers = [first or _Worker(self._layer, allow_exec)] + [
            _Worker(self._layer, allow_exec) for _ in range(workers - 1)]
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._closed = False
        self._ids = iter(range(1, 1 << 62))
        self._finalizer = weakref.finalize(self, _kill_all, list(self._workers))
        with ThreadPoolExecutor(len(self._workers)) as pool:
            list(pool.map(self._ensure_started, self._workers))
        for w in self._workers:
            self._idle.put(w)

    # -- public API
    def run(self, program: str, timeout: float | None = None, *, test: str | None = None,
            entry_point: str | None = None) -> ExecResult:
        """Run one program; blocks until a worker is free.  Never raises for program faults."""
        if self._closed:
            raise RuntimeError("Sandbox is closed")
        t = self.timeout if timeout is None else float(timeout)
        job = dict(self._limits, program=program, test=test, entry_point=entry_point, timeout=t,
                   id=next(self._ids))
        while True:
            try:
                worker = self._idle.get(timeout=0.5)
                break
            except queue.Empty:
                if self._closed:
                    raise RuntimeError("Sandbox is closed") from None
        try:
            return self._execute(worker, job)
        finally:
            self._idle.put(worker)

    def run_many(self, programs: Iterable[Program],
                 timeout: float | None = None) -> list[ExecResult]:
        """Run many programs on all workers at once; results come back in input order.  Items
        are program strings or mappings with ``program`` and optional ``test``/``entry_point``."""
        items = [p if isinstance(p, Mapping) else {"program": p} for p in programs]
        if not items:
            return []

        def one(item):
            return self.run(item["program"], timeout, test=item.get("test"),
                            entry_point=item.get("entry_point"))

        with ThreadPoolExecutor(min(len(self._workers), len(items))) as pool:
            return list(pool.map(one, items))

    def close(self) -> None:
        self._closed = True
        self._finalizer()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- internals
    def _ensure_started(self, worker: _Worker) -> None:
        if not worker.alive:
            worker.start()
            if worker.hello.get("uid") == 0 and self._layer.drop and os.getuid() == 0:
                worker.kill()
                raise RuntimeError("sandbox worker kept uid 0")

    def _execute(self, worker: _Worker, job: dict) -> ExecResult:
        start = time.monotonic()
        for attempt in (1, 2):  # a worker found dead before the job started gets one retry
            try:
                self._ensure_started(worker)
                nonce = secrets.token_hex(NONCE_LEN // 2).encode()
                return _interpret(worker.call(job, nonce, job["timeout"] + self.answer_grace),
                                  nonce)
            except (_WorkerGone, OSError, ValueError, RuntimeError, AttributeError) as exc:
                worker.kill()  # restarted on its next use
                if self._closed:
                    return ExecResult("error", False, "SandboxClosed", str(exc))
                if isinstance(exc, _NotStarted) and attempt == 1:
                    continue
                return ExecResult("error", False, "WorkerDied", str(exc)[:2000],
                                  duration=time.monotonic() - start)


def _kill_all(workers: Sequence[_Worker]) -> None:
    for w in workers:
        w.kill()


def _interpret(rep: dict, nonce: bytes) -> ExecResult:
    report, code, sig = rep.get("report", ""), rep.get("exit_code"), rep.get("signal")
    common = dict(stdout=rep.get("stdout", ""), stderr=rep.get("stderr", ""),
                  duration=float(rep.get("duration", 0.0)), exit_code=code)
    if rep.get("timed_out"):
        return ExecResult("timeout", False, "Timeout", "wall-clock limit exceeded", **common)
    if sig == signal.SIGXCPU:
        return ExecResult("timeout", False, "CPUTimeLimit", "CPU-time limit exceeded", **common)
    if code == 0 and hmac.compare_digest(report.encode(), b"PASS " + nonce):
        return ExecResult("passed", True, **common)
    if rep.get("output_limit"):
        return ExecResult("failed", False, "OutputLimitExceeded", "too much output", **common)
    if report.startswith("FAIL "):  # "FAIL <exception type>\n<message>"
        etype, _, message = report[5:].partition("\n")
        return ExecResult("failed", False, etype[:200], message, **common)
    if sig:
        name = signal.Signals(sig).name if sig in signal.valid_signals() else str(sig)
        return ExecResult("failed", False, "Killed:" + name, "terminated by a signal", **common)
    if code == 71:
        return ExecResult("error", False, "SandboxSetupError", common["stderr"][-500:], **common)
    if code == 0:
        return ExecResult("failed", False, "NoPassToken",
                          "exited 0 before the tests completed (e.g. os._exit)", **common)
    return ExecResult("failed", False, "ExitCode%d" % (code or 0), "", **common)
