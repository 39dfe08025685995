"""Worker side of evalkit's code sandbox; it runs *inside* the isolation layer.

The parent (``executor.py``) starts this file once per worker as ``python -I -B worker.py``
inside bubblewrap/unshare, already as an unprivileged uid.  It must stay self-contained
(standard library plus the optional ``pyseccomp``/``seccomp`` binding): it is bound read-only
into the sandbox on its own.

Protocol on the worker's stdin/stdout pipes (all frames are a 4-byte big-endian length + body):

* worker -> parent, once at start: a JSON hello (uid, seccomp/landlock availability).
* parent -> worker, per job: a JSON job, immediately followed by ``NONCE_LEN`` raw bytes,
  the job's secret pass token.  The worker ``splice``\\ s those bytes into a fresh pipe for
  the child, so the token never enters the worker's own memory.
* worker -> parent, per job: a JSON report (exit status, captured output tails, the bytes the
  child wrote on its result pipe).  The *parent* decides pass/fail from it.

Per job the worker forks a child that, in this order (all trusted code):
``setsid`` -> fresh work dir -> rlimits -> no_new_privs -> Landlock (fs allow-list) -> seccomp
-> reads the token from its pipe -> audit hook -> runs the untrusted program.  Only after the
program (and, in structured mode, ``check(candidate)``) returned normally does trusted code
write ``b"PASS " + token`` to fd 3 and ``_exit(0)``.  Any exception, ``SystemExit`` or
``os._exit`` therefore yields no token.  The token is protected from the program by the
audit hook (no frame/gc/ctypes introspection, no /proc) and Landlock (no /proc/self/mem).
"""

import errno
import json
import os
import resource
import select
import shutil
import signal
import struct
import sys
import tempfile
import time
import types

NONCE_LEN = 64
PASS_PREFIX = b"PASS "
RESULT_FD = 3  # in the child: where the pass token / failure info goes
_HDR = struct.Struct(">I")
_REPORT_CAP = 16384  # bytes of the child's result pipe the worker forwards


# --------------------------------------------------------------------------- plumbing
def _read_exact(fd, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _send(fd, obj):
    body = json.dumps(obj).encode()
    _write_all(fd, _HDR.pack(len(body)) + body)


def _move_nonce(src, dst):
    """Move NONCE_LEN bytes from pipe ``src`` to pipe ``dst`` inside the kernel."""
    left = NONCE_LEN
    while left:
        try:
            moved = os.splice(src, dst, left)
        except (AttributeError, OSError):  # no splice: copy through userspace instead
            data = _read_exact(src, left)
            if data is None:
                return False
            _write_all(dst, data)
            return True
        if moved == 0:
            return False
        left -= moved
    return True


# --------------------------------------------------------------------------- host facts
def _load_seccomp():
    for name in ("pyseccomp", "seccomp"):
        try:
            return __import__(name)
        except Exception:  # missing module or missing libseccomp.so
            continue
    return None


def _libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _landlock_abi():
    try:
        return max(0, int(_libc().syscall(444, None, 0, 1)))  # CREATE_RULESET_VERSION
    except Exception:
        return 0


# --------------------------------------------------------------------------- child: limits
def _vm_size():
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 2 << 30  # unknown: assume a generous 2 GiB base


def _set_rlimits(job):
    def lim(res, value):
        try:
            resource.setrlimit(res, (value, value))
        except (ValueError, OSError):
            pass

    cpu = int(job["timeout"]) + 2
    lim(resource.RLIMIT_CPU, cpu)
    lim(resource.RLIMIT_AS, _vm_size() + int(job["memory_mb"]) * (1 << 20))
    lim(resource.RLIMIT_FSIZE, int(job["max_file_bytes"]))
    lim(resource.RLIMIT_NOFILE, int(job["max_open_files"]))
    lim(resource.RLIMIT_CORE, 0)
    if os.getuid() != 0:  # RLIMIT_NPROC is ignored for root
        lim(resource.RLIMIT_NPROC, int(job["max_procs"]))


def _landlock(workdir):
    """Kernel-enforced file allow-list: read-only system dirs + Python, read-write work dir.

    Everything else (home dirs, /proc incl. /proc/self/mem, the rest of /tmp) is denied.
    Returns the Landlock ABI applied, 0 if unavailable."""
    import ctypes

    abi = _landlock_abi()
    if abi <= 0:
        return 0
    libc = _libc()
    handled = (1 << 13) - 1  # ABI 1: EXECUTE .. MAKE_SYM
    if abi >= 2:
        handled |= 1 << 13  # REFER
    if abi >= 3:
        handled |= 1 << 14  # TRUNCATE
    if abi >= 5:
        handled |= 1 << 15  # IOCTL_DEV
    read = (1 << 0) | (1 << 2) | (1 << 3)  # EXECUTE | READ_FILE | READ_DIR
    make_dev = (1 << 7) | (1 << 11)  # MAKE_CHAR | MAKE_BLOCK: never, even for root
    attr = struct.pack("QQ", handled, 0) if abi >= 4 else struct.pack("Q", handled)
    ruleset = libc.syscall(444, ctypes.c_char_p(attr), len(attr), 0)
    if ruleset < 0:
        return 0
    paths = {p: read for p in ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc",
                               sys.prefix, sys.base_prefix, sys.exec_prefix)}
    paths.update((p, read) for p in sys.path if p)
    paths.update({"/dev/urandom": 1 << 2, "/dev/random": 1 << 2, "/dev/zero": 1 << 2,
                  "/dev/null": (1 << 1) | (1 << 2) | ((1 << 14) if abi >= 3 else 0)})
    paths[workdir] = handled & ~make_dev
    try:
        for path, access in paths.items():
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            if not os.path.isdir(path):
                access &= (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)  # file rights only
            rule = struct.pack("=QiI", access & handled, fd, 0)[:12]  # packed path_beneath_attr
            libc.syscall(445, ruleset, 1, ctypes.c_char_p(rule), 0)
            os.close(fd)
        if libc.syscall(446, ruleset, 0) != 0:  # restrict_self (needs no_new_privs)
            return 0
    finally:
        os.close(ruleset)
    return abi


_DENY = ("ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2", "pivot_root",
         "chroot", "unshare", "setns", "bpf", "perf_event_open", "keyctl", "add_key",
         "request_key", "kexec_load", "kexec_file_load", "init_module", "finit_module",
         "delete_module", "reboot", "swapon", "swapoff", "acct", "userfaultfd",
         "open_by_handle_at", "name_to_handle_at", "setsid", "setpgid", "iopl", "ioperm",
         "quotactl", "syslog", "io_uring_setup", "io_uring_enter", "io_uring_register",
         "fanotify_init", "kcmp", "tkill", "pidfd_open", "pidfd_send_signal", "pidfd_getfd",
         "process_madvise", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
         "sethostname", "setdomainname", "mount_setattr", "fsopen", "fsmount", "move_mount",
         "open_tree", "lookup_dcookie", "vhangup")
_CLONE_NS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000,
             0x40000000, 0x00000080)  # NEWNS UTS IPC USER PID NET CGROUP, NEWTIME


def _seccomp(sc, allow_exec):
    """Deny-list filter: networking, tracing, namespaces, mounts, signals to other pids."""
    flt = sc.SyscallFilter(sc.ALLOW)
    eperm = sc.ERRNO(errno.EPERM)

    def add(action, name, *args):
        try:
            flt.add_rule(action, name, *args)
        except Exception:  # syscall unknown on this arch/libseccomp
            pass

    for name in _DENY:
        add(eperm, name)
    add(sc.ERRNO(errno.EACCES), "socket")  # every family: no inet, no unix, no netlink
    add(sc.ERRNO(errno.ENOSYS), "clone3")  # glibc then falls back to clone(), checked below
    for flag in _CLONE_NS:
        add(eperm, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    me = os.getpid()
    for name in ("kill", "rt_sigqueueinfo", "tgkill", "rt_tgsigqueueinfo"):
        add(eperm, name, sc.Arg(0, sc.LT, me))  # only signals to our own pid pass
        add(eperm, name, sc.Arg(0, sc.GT, me))
    add(eperm, "prlimit64", sc.Arg(0, sc.GT, 0))  # only pid 0 (= self)
    for name, idx in (("mknod", 1), ("mknodat", 2)):
        add(eperm, name, sc.Arg(idx, sc.MASKED_EQ, 0o170000, 0o020000))  # char devices
        add(eperm, name, sc.Arg(idx, sc.MASKED_EQ, 0o170000, 0o060000))  # block devices
    if not allow_exec:
        add(eperm, "execve")
        add(eperm, "execveat")
    flt.load()


# --------------------------------------------------------------------------- child: audit hook
class SandboxViolation(PermissionError, ValueError):
    """Raised inside the sandbox for a forbidden operation (a ValueError too, so stdlib code that
    probes ``sys._getframe`` -- namedtuple, typing, logging, enum -- degrades gracefully)."""


_BLOCKED_EVENTS = frozenset({
    "sys._getframe", "sys._current_frames", "sys._current_exceptions", "sys.settrace",
    "sys.setprofile", "sys.addaudithook", "gc.get_objects", "gc.get_referrers",
    "gc.get_referents", "code.__new__", "sys._getframemodulename",
    "sys.monitoring.register_callback"})
_EXEC_EVENTS = frozenset({"os.system", "os.exec", "os.posix_spawn", "os.spawn",
                          "subprocess.Popen", "pty.spawn"})
_FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"})
_BLOCKED_MODULES = frozenset({"ctypes", "_ctypes", "_testcapi", "_testinternalcapi",
                              "_testmultiphase", "_xxsubinterpreters", "_xxinterpchannels"})
_PATH_EVENTS = frozenset({"open", "os.listdir", "os.scandir", "os.chdir"})


def _make_audit_hook(allow_exec):
    """Build the PEP 578 hook.  It only uses closure variables (no globals/builtins look-ups)
    so that a program monkeypatching modules or ``builtins`` cannot change what it does."""
    blocked = _BLOCKED_EVENTS if allow_exec else _BLOCKED_EVENTS | _EXEC_EVENTS
    frame_attrs, modules, path_events = _FRAME_ATTRS, _BLOCKED_MODULES, _PATH_EVENTS
    violation, str_, bytes_, type_ = SandboxViolation, str, bytes, type
    realpath, fsdecode = os.path.realpath, os.fsdecode

    def hook(event, args):
        if event in blocked or event.startswith("ctypes."):
            raise violation("sandbox: %s is not allowed" % event)
        if event == "object.__getattr__":
            if len(args) > 1 and args[1] in frame_attrs:
                raise violation("sandbox: frame introspection is not allowed")
        elif event == "import":
            if args[0].partition(".")[0] in modules:
                raise violation("sandbox: import of %s is not allowed" % args[0])
        elif event in path_events and args and type_(args[0]) in (str_, bytes_):
            path = realpath(fsdecode(args[0]))
            if path == "/proc" or path.startswith("/proc/"):
                raise violation("sandbox: /proc is not accessible")

    return hook


# --------------------------------------------------------------------------- child: harness
def _snapshot_modules():
    mods = dict(sys.modules)
    return mods, {n: dict(m.__dict__) for n, m in mods.items() if hasattr(m, "__dict__")}


def _restore_modules(mods, dicts):
    """Undo what candidate code did to ``sys.modules``/``builtins``/module attributes."""
    sys.modules.clear()
    sys.modules.update(mods)
    for name, saved in dicts.items():
        d = mods[name].__dict__
        d.clear()
        d.update(saved)


def _run_untrusted(job, token, allow_exec):
    """Run the program; only a normal return writes ``token`` (b"PASS " + nonce) to fd 3."""
    import builtins

    write, _exit, dumps = os.write, os._exit, json.dumps
    out, err, excepthook = sys.stdout, sys.stderr, sys.__excepthook__
    structured = job.get("test") is not None
    try:
        code = compile(job["program"], "<candidate>" if structured else "<program>", "exec")
        test = compile(job["test"], "<test>", "exec") if structured else None
        entry = job.get("entry_point")
        if structured:
            snap = _snapshot_modules()
        main = types.ModuleType("__main__")
        main.__dict__["__builtins__"] = dict(builtins.__dict__)  # `builtins.x = ..` can't reach it
        sys.modules["__main__"] = main
        sys.argv = ["<program>"]
        sys.addaudithook(_make_audit_hook(allow_exec))
        exec(code, main.__dict__)
        if structured:
            candidate = main.__dict__[entry] if entry else None
            _restore_modules(*snap)  # the tests see pristine modules and builtins
            ns = {"__name__": "__main__", "__builtins__": dict(snap[1]["builtins"])}
            if entry:
                ns[entry] = candidate
            exec(test, ns)
            check = ns.get("check")
            if entry and callable(check):
                check(candidate)
    except BaseException as exc:  # includes SystemExit / KeyboardInterrupt
        token[:] = bytes(len(token))
        try:
            sys.stderr = err
            excepthook(type(exc), exc, exc.__traceback__)
            info = {"type": str(type(exc).__name__), "message": str(exc)[:2000]}
            write(RESULT_FD, b"FAIL " + dumps(info).encode())
        finally:
            _exit(1)
    for stream in (out, err):
        try:
            stream.flush()
        except BaseException:
            pass
    write(RESULT_FD, token)
    _exit(0)


def _child(job, workdir, nonce_fd, fds, seccomp_mod):
    """Runs in the forked child; never returns."""
    null_fd, out_w, err_w, res_w = fds
    try:
        os.setsid()
        for src, dst in ((null_fd, 0), (out_w, 1), (err_w, 2), (res_w, RESULT_FD), (nonce_fd, 4)):
            os.dup2(src, dst)
        os.closerange(5, 1 << 20)
        os.chdir(workdir)
        os.environ.update(HOME=workdir, TMPDIR=workdir)
        tempfile.tempdir = workdir
        token = bytearray(PASS_PREFIX + bytes(NONCE_LEN))
        view, got = memoryview(token)[len(PASS_PREFIX):], 0
        while got < NONCE_LEN:
            n = os.readv(4, [view[got:]])
            if n <= 0:
                raise RuntimeError("sandbox: pass token missing")
            got += n
        del view
        os.close(4)
        _set_rlimits(job)
        _libc().prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
        _landlock(workdir)
        if seccomp_mod is not None:
            _seccomp(seccomp_mod, job.get("allow_exec", False))
        for name in list(sys.modules):  # re-importing these is refused by the audit hook
            if name.partition(".")[0] in ("ctypes", "_ctypes", "pyseccomp", "seccomp"):
                del sys.modules[name]
        _run_untrusted(job, token, job.get("allow_exec", False))
    except BaseException as exc:
        try:
            os.write(2, ("sandbox setup failed: %r\n" % (exc,)).encode())
        except BaseException:
            pass
    finally:
        os._exit(71)


# --------------------------------------------------------------------------- worker: jobs
class _Tail:
    """Keeps the last ``cap`` bytes of a stream and counts the total."""

    def __init__(self, cap):
        self.cap, self.total, self.buf = cap, 0, bytearray()

    def add(self, data):
        self.total += len(data)
        self.buf += data
        if len(self.buf) > 2 * self.cap:
            del self.buf[:-self.cap]

    def text(self):
        return bytes(self.buf[-self.cap:]).decode("utf-8", "replace")


def _kill_group(pid, private_pidns):
    for target in (-pid,) + ((-1,) if private_pidns else ()):
        try:
            os.kill(target, signal.SIGKILL)
        except OSError:
            pass


def _rmtree(path):
    def fix(func, p, _exc):
        try:
            os.chmod(os.path.dirname(p) or p, 0o700)
            os.chmod(p, 0o700)
            func(p)
        except OSError:
            pass

    shutil.rmtree(path, onerror=fix)


def _run_job(job, nonce_r, base, seq, seccomp_mod, private_pidns):
    timeout = float(job["timeout"])
    cap = int(job["max_output_bytes"])
    out_limit = 16 * cap
    workdir = os.path.join(base, "job%d" % seq)
    os.mkdir(workdir, 0o700)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    res_r, res_w = os.pipe()
    null_fd = os.open(os.devnull, os.O_RDWR)
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(job, workdir, nonce_r, (null_fd, out_w, err_w, res_w), seccomp_mod)
    for fd in (out_w, err_w, res_w, null_fd, nonce_r):
        os.close(fd)
    tails = {out_r: _Tail(cap), err_r: _Tail(cap), res_r: _Tail(_REPORT_CAP)}
    timed_out = over_limit = False
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    poller = select.poll()
    for fd in tails:
        poller.register(fd, select.POLLIN)
    if pidfd is not None:
        poller.register(pidfd, select.POLLIN)
    open_fds, exited = set(tails), False
    deadline = start + timeout
    while not exited:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        wait_ms = int(left * 1000) + 1 if pidfd is not None else min(int(left * 1000) + 1, 10)
        for fd, _ in poller.poll(wait_ms):
            if fd == pidfd:
                exited = True
            elif fd in open_fds:
                data = os.read(fd, 65536)
                if data:
                    tails[fd].add(data)
                else:
                    poller.unregister(fd)
                    open_fds.discard(fd)
        if pidfd is None and os.waitpid(pid, os.WNOHANG)[0]:
            exited, pid_status = True, None
        if tails[out_r].total + tails[err_r].total > out_limit:
            over_limit = True
            break
    _kill_group(pid, private_pidns)
    _drain(open_fds, tails)
    duration = time.monotonic() - start
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        status = 0
    _reap()
    for fd in list(tails) + ([pidfd] if pidfd is not None else []):
        os.close(fd)
    _rmtree(workdir)
    exit_code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    return {"id": job.get("id"), "exit_code": exit_code, "signal": sig, "timed_out": timed_out,
            "output_limit": over_limit, "duration": duration,
            "report": bytes(tails[res_r].buf).decode("utf-8", "replace"),
            "stdout": tails[out_r].text(), "stderr": tails[err_r].text()}


def _drain(open_fds, tails, budget=0.5):
    """After the kill: collect what is still buffered in the pipes, without blocking for long."""
    end = time.monotonic() + budget
    while open_fds and time.monotonic() < end:
        ready, _, _ = select.select(list(open_fds), [], [], max(0.0, end - time.monotonic()))
        if not ready:
            break
        for fd in ready:
            data = os.read(fd, 65536)
            if data and tails[fd].total < 64 * tails[fd].cap:
                tails[fd].add(data)
            elif not data:
                open_fds.discard(fd)


def _reap():
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return


def main(argv):
    private_pidns = "--private-pidns" in argv
    proto_in, proto_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(2, 1)  # stray prints from libraries must not corrupt the protocol
    os.close(null)
    seccomp_mod = _load_seccomp()
    landlock = _landlock_abi()
    try:
        _libc().prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: children can't read our memory
    except Exception:
        pass
    base = tempfile.mkdtemp(prefix="evalkit-sandbox-")
    _send(proto_out, {"hello": 1, "uid": os.getuid(), "pid": os.getpid(),
                      "seccomp": getattr(seccomp_mod, "__name__", None), "landlock": landlock,
                      "python": sys.version.split()[0]})
    seq = 0
    try:
        while True:
            hdr = _read_exact(proto_in, _HDR.size)
            if hdr is None:
                return
            body = _read_exact(proto_in, _HDR.unpack(hdr)[0])
            nonce_r, nonce_w = os.pipe()
            if body is None or not _move_nonce(proto_in, nonce_w):
                return
            os.close(nonce_w)
            seq += 1
            _send(proto_out, _run_job(json.loads(body), nonce_r, base, seq, seccomp_mod,
                                      private_pidns))
    finally:
        _rmtree(base)


if __name__ == "__main__":
    main(sys.argv[1:])
