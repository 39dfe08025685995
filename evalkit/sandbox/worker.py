"""Worker side of evalkit's code sandbox; it runs *inside* the isolation layer.

The parent (``executor.py``) starts this file once per worker as ``python -I -B worker.py``
inside bubblewrap/unshare as uid 65534 (or as root inside bwrap; then it drops to 65534 before
reading any job).  It must stay self-contained (standard library plus the optional
``pyseccomp``/``seccomp`` binding): it is bound read-only into the sandbox on its own.

Protocol on the worker's stdin/stdout pipes (all frames are a 4-byte big-endian length + body):

* worker -> parent, once at start: a JSON hello (uid, seccomp/landlock availability).
* parent -> worker, per job: a JSON job, immediately followed by ``NONCE_LEN`` raw bytes,
  the job's secret pass token.  The worker ``splice``\\ s those bytes into a fresh pipe for
  the child, so the token never enters the worker's own memory.
* worker -> parent, per job: an empty frame as soon as the job is read (the job has started),
  then a JSON report (exit status, captured output tails, the bytes the child wrote on its
  result pipe).  The *parent* decides pass/fail from it.

Per job the worker forks a child that, in this order (all trusted code): ``setsid`` -> its
own work dir -> reads the token from its pipe -> rlimits -> [guards] -> closes every other fd ->
PEP 578 audit hook -> runs the program.  Only after the program (and, in structured mode,
``check(candidate)``) returned normally does trusted code write ``b"PASS " + token`` to fd 3
and ``_exit(0)``; an exception, ``SystemExit`` or ``os._exit`` yields no token.

Guards, two modes:

* ``--external-seccomp`` (bwrap layers): bwrap already loaded one seccomp filter for the whole
  worker, mounted no /proc and made the worker pid 1 of its namespace (the kernel drops signals
  sent to it from inside).  This process then never loads ctypes.
* otherwise (unshare/none layers): the child applies Landlock (file allow-list) and its own
  seccomp filter (signals only to itself, no execve) through ctypes.

The token sits in the harness's frame while the program runs in the same interpreter, so the
program must not reach that frame or raw memory.  The audit hook refuses frame introspection
(``sys._getframe``, ``tb_frame``/``gi_frame``, tracing), ``gc`` object walks, ctypes (also when
loaded through importlib under another name), code-object construction and /proc paths; in bwrap
mode there is no /proc and no ctypes in the process at all, and other processes can't read its
memory (ptrace/process_vm_* refused).  Known limits, documented rather than defended: crafted
bytecode via ``marshal`` could corrupt interpreter memory; in the ctypes mode an already-loaded
``_ctypes`` can be re-obtained through importlib's extension cache; and in single-program mode
the candidate shares the tests' namespace, so rebinding ``__builtins__`` entries or faking
modules in ``sys.modules`` fools *the tests* (structured mode gives the tests pristine builtins
and modules).
"""

import errno
import fcntl
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
CHILD_PID_PLACEHOLDER = 0x3EADBEEF  # the child's pid in a prebuilt per-child filter (> pid_max)
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


_LIBC = []


def _libc():
    if not _LIBC:
        import ctypes

        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    return _LIBC[0]


def _landlock_abi():
    try:
        return max(0, int(_libc().syscall(444, None, 0, 1)))  # CREATE_RULESET_VERSION
    except Exception:
        return 0


# --------------------------------------------------------------------------- child: limits
def _vm_size():
    """This process's address-space size.  From /proc when mounted, else (bwrap mounts none)
    by bisection: the smallest RLIMIT_AS that still lets one more page be mapped (~0.3 ms)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        pass
    import mmap

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    lo, hi = 0, min(hard, 1 << 47) if hard != resource.RLIM_INFINITY else 1 << 47
    try:
        while hi - lo > (1 << 20):
            mid = (lo + hi) // 2
            resource.setrlimit(resource.RLIMIT_AS, (mid, hard))
            try:
                mmap.mmap(-1, mmap.PAGESIZE).close()
                hi = mid
            except (OSError, MemoryError):
                lo = mid
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    return hi


_VM = [0, 0]  # cached (size, jobs since measured): the worker's size barely moves


def _set_rlimits(job):
    def lim(res, value):
        try:
            resource.setrlimit(res, (value, value))
        except (ValueError, OSError):
            pass

    cpu = int(job["timeout"]) + 2
    lim(resource.RLIMIT_CPU, cpu)
    lim(resource.RLIMIT_AS, _VM[0] + (16 << 20) + int(job["memory_mb"]) * (1 << 20))
    lim(resource.RLIMIT_FSIZE, int(job["max_file_bytes"]))
    lim(resource.RLIMIT_NOFILE, int(job["max_open_files"]))
    lim(resource.RLIMIT_CORE, 0)
    if os.getuid() != 0:  # RLIMIT_NPROC is ignored for root
        lim(resource.RLIMIT_NPROC, int(job["max_procs"]))


class _Guards:
    """Landlock and seccomp, prepared once per worker so that each forked child only applies
    them (building a libseccomp filter costs ~1 ms, Landlock's path look-ups about as much)."""

    _PID = CHILD_PID_PLACEHOLDER

    def __init__(self, seccomp_mod, prebuilt=None):
        """``prebuilt``: {(allow_exec, root): BPF bytes} the parent built (it sees pyseccomp where
        this interpreter, started with -I, may not); else they are built here from ``seccomp_mod``."""
        self.sc, self.abi, self._bpf = seccomp_mod, _landlock_abi(), dict(prebuilt or {})
        self.source = "parent" if self._bpf else getattr(seccomp_mod, "__name__", None)
        self._rules = self._landlock_rules() if self.abi else []
        try:  # build the common filter now; an unusable binding counts as "no seccomp"
            if self._bpf or self.sc is not None:
                self._filter(False)
            else:
                self.source = None
        except Exception:
            self.sc, self._bpf, self.source = None, {}, None

    def _filter(self, allow_exec):
        key = (bool(allow_exec), os.getuid() == 0)
        if key not in self._bpf:
            self._bpf[key] = build_filter(self.sc, *key, self_pid=self._PID)
        return self._bpf[key]

    # -- Landlock: kernel-enforced file allow-list
    def _handled(self):
        handled = (1 << 13) - 1  # ABI 1: EXECUTE .. MAKE_SYM
        for abi, bit in ((2, 13), (3, 14), (5, 15)):  # REFER, TRUNCATE, IOCTL_DEV
            if self.abi >= abi:
                handled |= 1 << bit
        return handled

    def _landlock_rules(self):
        """(O_PATH fd, access) for the read-only system dirs, Python and /dev nodes."""
        read = (1 << 0) | (1 << 2) | (1 << 3)  # EXECUTE | READ_FILE | READ_DIR
        paths = dict.fromkeys(("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin",
                               "/etc/ld.so.cache", "/etc/localtime", "/etc/passwd", "/etc/group",
                               sys.prefix, sys.base_prefix, sys.exec_prefix), read)
        paths.update((p, read) for p in sys.path if p)
        paths.update({"/dev/urandom": 1 << 2, "/dev/random": 1 << 2, "/dev/zero": 1 << 2,
                      "/dev/null": (1 << 1) | (1 << 2) | (1 << 14)})
        rules = []
        for path, access in paths.items():
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            if not os.path.isdir(path):  # files only take file rights
                access &= (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)
            rules.append((fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100), access))
            os.close(fd)
        return rules

    def landlock(self, workdir):
        """Allow read-only system dirs + Python and read-write ``workdir``; deny the rest
        (home dirs, the rest of /tmp, /proc incl. /proc/self/mem).  Returns the ABI or 0."""
        import ctypes

        if not self.abi:
            return 0
        libc, handled = _libc(), self._handled()
        attr = struct.pack("QQ", handled, 0) if self.abi >= 4 else struct.pack("Q", handled)
        ruleset = libc.syscall(444, ctypes.c_char_p(attr), len(attr), 0)
        if ruleset < 0:
            return 0
        wd = os.open(workdir, os.O_PATH | os.O_CLOEXEC)
        make_dev = (1 << 6) | (1 << 11)  # MAKE_CHAR | MAKE_BLOCK: never, even for root (1 << 7 is MAKE_DIR)
        try:
            for fd, access in self._rules + [(wd, handled & ~make_dev)]:
                rule = struct.pack("=Qi", access & handled, fd)  # packed path_beneath_attr
                libc.syscall(445, ruleset, 1, ctypes.c_char_p(rule), 0)
            return self.abi if libc.syscall(446, ruleset, 0) == 0 else 0  # restrict_self
        finally:
            os.close(ruleset)
            os.close(wd)

    # -- seccomp: deny-list filter
    def seccomp(self, allow_exec):
        """Load the filter, with the child's own pid patched in.  False if unavailable."""
        import ctypes

        if self.source is None:
            return False
        prog = bytearray(self._filter(allow_exec))
        for off in range(0, len(prog), 8):  # struct sock_filter {u16 code; u8 jt, jf; u32 k}
            if struct.unpack_from("I", prog, off + 4)[0] == self._PID:
                struct.pack_into("I", prog, off + 4, os.getpid())

        class SockFprog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        buf = ctypes.create_string_buffer(bytes(prog), len(prog))
        fprog = SockFprog(len(prog) // 8, ctypes.addressof(buf))
        if _libc().prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:  # PR_SET_SECCOMP, FILTER
            raise OSError(ctypes.get_errno(), "seccomp filter refused")
        return True

_DENY = ("ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2", "pivot_root",
         "chroot", "unshare", "setns", "bpf", "perf_event_open", "keyctl", "add_key",
         "request_key", "kexec_load", "kexec_file_load", "init_module", "finit_module",
         "delete_module", "reboot", "swapon", "swapoff", "acct", "userfaultfd",
         "open_by_handle_at", "name_to_handle_at", "iopl", "ioperm", "quotactl", "syslog",
         "io_uring_setup", "io_uring_enter", "io_uring_register", "fanotify_init", "kcmp",
         "tkill", "pidfd_send_signal", "pidfd_getfd", "process_madvise", "settimeofday",
         "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname",
         "mount_setattr", "fsopen", "fsmount", "move_mount", "open_tree", "lookup_dcookie",
         "vhangup", "sched_setscheduler", "sched_setattr", "sched_setparam", "ioprio_set")
_CLONE_NS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000,
             0x40000000, 0x00000080)  # NEWNS UTS IPC USER PID NET CGROUP, NEWTIME


def build_filter(sc, allow_exec=False, root=False, self_pid=None):
    """Seccomp deny-list as BPF bytes (``sc``: the pyseccomp/seccomp module).  Refused:
    sockets of every family, tracing, namespaces, mounts, kernel keys/modules/bpf, io_uring,
    raising another process's rlimits, device nodes and (unless ``allow_exec``) execve.

    ``self_pid`` given: a per-child filter that also confines signals to that pid and keeps
    the child in its session (``setsid``/``setpgid``).  Without it: the worker-wide filter that
    bwrap loads, where the worker is the pid namespace's init, which the kernel already shields
    from signals sent inside the namespace.  ``root``: a uid-0 child (last-resort layers only)
    may not fork (RLIMIT_NPROC ignores root) nor raise rlimits."""
    flt = sc.SyscallFilter(sc.ALLOW)
    flt.set_attr(sc.Attr.CTL_NNP, 0)  # no_new_privs is set by bwrap or by us
    eperm = sc.ERRNO(errno.EPERM)

    def add(action, name, *args):
        try:
            flt.add_rule(action, name, *args)
        except Exception:  # syscall unknown on this arch/libseccomp
            pass

    for name in _DENY:
        add(eperm, name)
    add(sc.ERRNO(errno.EACCES), "socket")
    add(sc.ERRNO(errno.ENOSYS), "clone3")  # glibc then falls back to clone(), checked below
    for flag in _CLONE_NS:
        add(eperm, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    add(eperm, "prlimit64", sc.Arg(0, sc.GT, 0))  # only pid 0 (= self)
    add(eperm, "setpriority", sc.Arg(1, sc.NE, 0))  # only "who" 0 (= self)
    add(eperm, "sched_setaffinity", sc.Arg(0, sc.NE, 0))
    for name, idx in (("mknod", 1), ("mknodat", 2)):
        add(eperm, name, sc.Arg(idx, sc.MASKED_EQ, 0o170000, 0o020000))  # char devices
        add(eperm, name, sc.Arg(idx, sc.MASKED_EQ, 0o170000, 0o060000))  # block devices
    if not allow_exec:
        add(eperm, "execve")
        add(eperm, "execveat")
    if self_pid is not None:
        for name in ("setsid", "setpgid", "pidfd_open"):
            add(eperm, name)
        for name in ("kill", "rt_sigqueueinfo", "tgkill", "rt_tgsigqueueinfo"):
            add(eperm, name, sc.Arg(0, sc.LT, self_pid))  # only signals to self_pid pass
            add(eperm, name, sc.Arg(0, sc.GT, self_pid))
    if root:
        add(eperm, "clone", sc.Arg(0, sc.MASKED_EQ, 0x00010000, 0))  # no CLONE_THREAD: a fork
        for name in ("fork", "vfork", "setrlimit"):
            add(eperm, name)
        add(eperm, "prlimit64", sc.Arg(2, sc.NE, 0))  # reading limits stays allowed
    r, w = os.pipe()
    with os.fdopen(w, "wb") as f:
        flt.export_bpf(f)
    with os.fdopen(r, "rb") as f:
        return f.read()


# --------------------------------------------------------------------------- child: audit hook
class SandboxViolation(PermissionError, ValueError):
    """Raised inside the sandbox for a forbidden operation (a ValueError too, so stdlib code that
    probes ``sys._getframe`` -- namedtuple, typing, logging, enum -- degrades gracefully)."""


class SandboxImportError(ImportError):
    """A refused import (ctypes & co.); an ImportError so optional imports fall back cleanly."""


_BLOCKED_EVENTS = frozenset({
    "sys._getframe", "sys._current_frames", "sys._current_exceptions", "sys.settrace",
    "sys.setprofile", "sys.addaudithook", "gc.get_objects", "gc.get_referrers",
    "gc.get_referents", "code.__new__", "sys.monitoring.register_callback"})
# (``sys._getframemodulename``, Python 3.12+, gives a module's name, never a frame: namedtuple, enum and
# typing call it and catch only AttributeError, so refusing it broke BFCL's and tau2's environments)
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
    modules = _BLOCKED_MODULES if allow_exec else _BLOCKED_MODULES | {"_posixsubprocess"}
    frame_attrs, path_events = _FRAME_ATTRS, _PATH_EVENTS
    violation, refused, str_, bytes_, type_ = SandboxViolation, SandboxImportError, str, bytes, type
    realpath, fsdecode = os.path.realpath, os.fsdecode

    def hook(event, args):
        if event in blocked or event.startswith("ctypes."):
            raise violation("sandbox: %s is not allowed" % event)
        if event == "object.__getattr__":
            if len(args) > 1 and args[1] in frame_attrs:
                raise violation("sandbox: frame introspection is not allowed")
        elif event == "import":  # first part: ctypes.util; last: x._ctypes -> PyInit__ctypes
            if args[0].partition(".")[0] in modules or args[0].rpartition(".")[2] in modules:
                raise refused("sandbox: import of %s is not allowed" % args[0])
        elif event in path_events and args and type_(args[0]) in (str_, bytes_):
            path = realpath(fsdecode(args[0]))
            if path == "/proc" or path.startswith("/proc/"):
                raise violation("sandbox: /proc is not accessible")

    return hook


# --------------------------------------------------------------------------- child: harness
_SNAPSHOT = [None]


def _snapshot_modules():
    """``sys.modules`` and every module's namespace, taken in the worker (so a fork inherits it
    instead of paying ~3 ms per job); retaken when the set of loaded modules changed."""
    snap = _SNAPSHOT[0]
    if snap is None or snap[0].keys() != sys.modules.keys():
        mods = dict(sys.modules)
        snap = _SNAPSHOT[0] = (mods, {n: dict(m.__dict__) for n, m in mods.items()
                                      if isinstance(m, types.ModuleType)
                                      and type(m.__dict__) is dict})
    return snap


def _restore_modules(modules, mods, dicts):
    """Undo what candidate code did to ``sys.modules``/``builtins``/module attributes.  Uses no
    globals: the candidate may have rebound this module's names (it can reach them)."""
    modules.clear()
    modules.update(mods)
    for name, saved in dicts.items():
        d = mods[name].__dict__
        d.clear()
        d.update(saved)


def _run_untrusted(job, token, allow_exec, snap):
    """Run the program; only a normal return writes ``token`` (b"PASS " + nonce) to fd 3."""
    import builtins

    write, _exit, result_fd, getpid = os.write, os._exit, RESULT_FD, os.getpid
    me = getpid()  # a process the program forked may also get back here: it reports nothing
    out, err, excepthook = sys.stdout, sys.stderr, sys.__excepthook__
    real_builtins = builtins.__dict__
    saved_builtins = dict(real_builtins)  # to report failures even after `builtins.str = ...`
    structured = job.get("test") is not None
    try:
        code = compile(job["program"], "<candidate>" if structured else "<program>", "exec",
                       dont_inherit=True, optimize=0)
        test = (compile(job["test"], "<test>", "exec", dont_inherit=True, optimize=0)
                if structured else None)
        entry = job.get("entry_point")
        if structured:  # only modules still loaded now (ctypes & co. were dropped)
            mods = {k: v for k, v in snap[0].items() if k in sys.modules}
            snap = (sys.modules, mods, {k: v for k, v in snap[1].items() if k in mods})
            restore = _restore_modules
        main = types.ModuleType("__main__")
        main.__dict__["__builtins__"] = dict(builtins.__dict__)  # `builtins.x = ..` can't reach it
        sys.modules["__main__"] = main
        sys.argv = ["<program>"]
        sys.addaudithook(_make_audit_hook(allow_exec))
        exec(code, main.__dict__)
        if structured:
            candidate = main.__dict__[entry] if entry else None
            restore(*snap)  # the tests see pristine modules and builtins
            ns = {"__name__": "__main__", "__builtins__": dict(snap[2]["builtins"])}
            if entry:
                ns[entry] = candidate
            exec(test, ns)
            check = ns.get("check")
            if entry and callable(check):
                check(candidate)
    except BaseException as exc:  # includes SystemExit / KeyboardInterrupt: never a pass
        if getpid() != me:
            _exit(1)
        try:
            real_builtins.update(saved_builtins)
            token[:] = bytes(len(token))
            try:
                out.flush()  # what the program printed before failing
            except BaseException:
                pass
            sys.stderr = err
            excepthook(type(exc), exc, exc.__traceback__)
            write(result_fd, b"FAIL %s\n%s" % (type(exc).__name__.encode("utf-8", "replace"),
                                                str(exc)[:2000].encode("utf-8", "replace")))
        finally:
            _exit(1)
    for stream in (out, err):
        try:
            stream.flush()
        except BaseException:
            pass
    if getpid() == me:
        try:
            write(result_fd, token)
        except BaseException:  # e.g. the program closed fd 3: no pass
            _exit(1)
    _exit(0)


def _child(job, workdir, nonce_fd, fds, guards, snap):
    """Runs in the forked child; never returns.  ``guards`` is None when bwrap already loaded
    the seccomp filter for the whole worker (then no ctypes is ever loaded in this process)."""
    null_fd, out_w, err_w, res_w = fds
    try:
        os.setsid()
        signal.signal(signal.SIGINT, signal.default_int_handler)  # the worker ignores it
        for dst, src in enumerate([fcntl.fcntl(fd, fcntl.F_DUPFD, 10)  # out of the way first
                                   for fd in (null_fd, out_w, err_w, res_w, nonce_fd)]):
            # 0 stdin, 1 stdout, 2 stderr, 3 result, 4 token
            os.dup2(src, dst)
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
        if guards is not None:
            _libc().prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
            guards.landlock(workdir)
            guards.seccomp(job.get("allow_exec", False))
        os.closerange(5, 1 << 20)  # the worker's pipes and Landlock's path fds
        # re-importing these is refused by the audit hook (_posixsubprocess may be built into
        # the interpreter, as in Debian's, and loaded already: drop it and what holds it)
        drop = ("ctypes", "_ctypes", "pyseccomp", "seccomp") + (
            () if job.get("allow_exec", False) else ("_posixsubprocess", "subprocess"))
        for name in list(sys.modules):
            if name.partition(".")[0] in drop:
                del sys.modules[name]
        _run_untrusted(job, token, job.get("allow_exec", False), snap)
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
    if not os.path.isdir(path) or os.path.islink(path):
        try:
            os.unlink(path)
        except OSError:
            pass
        return

    def fix(func, p, _exc):
        try:
            os.chmod(os.path.dirname(p) or p, 0o700)
            os.chmod(p, 0o700)
            func(p)
        except OSError:
            pass

    shutil.rmtree(path, onerror=fix)


def _wipe(base, private_tmp, keep=()):
    """Remove everything the program left: its work dir and anything else it put in ``base``;
    with a private /tmp (bwrap, unshare) everything in /tmp too, so no job sees another's.
    ``keep``: read-only binds below /tmp (an interpreter living there), left as they are."""
    _wipe_in("/tmp" if private_tmp and os.path.dirname(base) == "/tmp" else base, base, keep)


def _wipe_in(root, base, keep):
    for name in os.listdir(root):
        path = os.path.join(root, name)
        if path in keep:
            continue
        if any(k.startswith(path + "/") for k in keep):  # a folder made for a bind: wipe around it
            if os.path.isdir(path) and not os.path.islink(path):
                _wipe_in(path, base, keep)
            continue
        if path == base:
            for inner in os.listdir(base):
                _rmtree(os.path.join(base, inner))
        elif os.path.isdir(path) and not os.path.islink(path):
            _rmtree(path)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


def _run_job(job, nonce_r, base, seq, guards, private_pidns, private_tmp, keep=()):
    timeout = float(job["timeout"])
    cap = int(job["max_output_bytes"])
    out_limit = 16 * cap
    workdir = tempfile.mkdtemp(prefix="job%d-" % seq, dir=base)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    res_r, res_w = os.pipe()
    null_fd = os.open(os.devnull, os.O_RDWR)
    snap = _snapshot_modules() if job.get("test") is not None else None
    if _VM[1] % 64 == 0:
        _VM[0] = _vm_size()  # inherited by the child: its size at fork is ours
    _VM[1] += 1
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(job, workdir, nonce_r, (null_fd, out_w, err_w, res_w), guards, snap)
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
        if pidfd is None:
            reaped, status = os.waitpid(pid, os.WNOHANG)
            exited = bool(reaped)
        if tails[out_r].total + tails[err_r].total > out_limit:
            over_limit = True
            break
    _kill_group(pid, private_pidns)
    _drain(open_fds, tails)
    duration = time.monotonic() - start
    if pidfd is not None or not exited:
        _, status = os.waitpid(pid, 0)
    _reap()
    for fd in list(tails) + ([pidfd] if pidfd is not None else []):
        os.close(fd)
    _wipe(base, private_tmp, keep)
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


def _drop_privileges(uid):
    """Root inside bwrap (no user namespace): become ``uid`` for good before any job."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    try:
        os.setuid(0)
    except PermissionError:
        return
    raise SystemExit("sandbox worker: could not drop root")


def _external_seccomp_active():
    """bwrap loaded our filter for this whole process: socket() must be refused."""
    import socket

    try:
        socket.socket().close()
    except PermissionError:
        return True
    return False


def main(argv):
    """Flags: --private-pidns (own pid namespace: kill(-1) cleans up), --private-tmp (/tmp is
    ours alone: wiped after each job), --keep=JSON (binds below /tmp the wipe leaves alone),
    --drop-uid=N (started as root), --external-seccomp (bwrap loaded the filter: no ctypes,
    Landlock or per-child filter), --filters-fd=N (the per-child filters, built by the parent)."""
    for arg in argv:
        if arg.startswith("--drop-uid=") and os.getuid() == 0:
            _drop_privileges(int(arg.split("=", 1)[1]))
    private_pidns = "--private-pidns" in argv
    private_tmp = "--private-tmp" in argv
    keep, prebuilt = (), {}
    for arg in argv:
        if arg.startswith("--keep="):
            keep = tuple(json.loads(arg.split("=", 1)[1]))
        elif arg.startswith("--filters-fd="):
            with os.fdopen(int(arg.split("=", 1)[1]), "rb") as f:
                prebuilt = {(k[0] == "1", k[1] == "1"): bytes.fromhex(v)
                            for k, v in json.loads(f.read() or b"{}").items()}
    proto_in, proto_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(2, 1)  # stray prints from libraries must not corrupt the protocol
    os.close(null)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a pid-namespace init: unkillable inside
    if "--external-seccomp" in argv:
        guards, seccomp, landlock = None, "bwrap" if _external_seccomp_active() else None, 0
    else:
        guards = _Guards(None if prebuilt else _load_seccomp(), prebuilt)
        seccomp, landlock = guards.source, guards.abi
        try:
            _libc().prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: children can't read our memory
        except Exception:
            pass
    base = tempfile.mkdtemp(prefix="evalkit-sandbox-")
    _send(proto_out, {"hello": 1, "uid": os.getuid(), "pid": os.getpid(), "seccomp": seccomp,
                      "landlock": landlock, "python": sys.version})
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
            _write_all(proto_out, _HDR.pack(0))  # ack: the job has started
            seq += 1
            _send(proto_out, _run_job(json.loads(body), nonce_r, base, seq, guards,
                                      private_pidns, private_tmp, keep))
    finally:
        _rmtree(base)


if __name__ == "__main__":
    main(sys.argv[1:])
