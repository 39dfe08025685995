"""The isolation layers the sandbox's workers start in, and the command line each one runs.

``_candidates`` lists the layers this host can try, strongest first (bubblewrap in a user namespace,
bubblewrap as root without one, util-linux ``unshare``, none); ``_Layer.command`` builds the argv
that starts ``worker.py`` inside one, with the seccomp filters built here (see ``executor.py`` for
which layer runs when and what each guarantees).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import NamedTuple

from .worker import CHILD_PID_PLACEHOLDER, build_filter
from .worker import _load_seccomp as _seccomp_module

WORKER_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
NOBODY = 65534
_SANDBOX_WORKER = "/sandbox/worker.py"  # where bwrap binds worker.py
_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp",
        "TMPDIR": "/tmp", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1"}
_SETPRIV = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all"]
_BWRAP = "bwrap"  # overridable (tests simulate a host where bwrap is broken)

#: what ``layer=`` / ``$EVALKIT_SANDBOX_LAYER`` accepts: a family (its variants in order) or one variant
LAYER_NAMES = ("auto", "bwrap", "bwrap-userns", "bwrap-rootns", "unshare", "none")


class _Command(NamedTuple):
    argv: list[str]
    pass_fds: list[int]
    info_fd: int | None


@dataclass(frozen=True)
class _Layer:
    name: str  # bwrap | unshare | none
    variant: str = ""  # "" or "rootns" (bwrap without a user namespace, run by root)
    drop: bool = True  # root parent: run the worker as uid 65534

    @property
    def key(self) -> str:
        """The name that forces exactly this layer: bwrap-userns, bwrap-rootns, unshare, none."""
        return {"": "bwrap-userns", "rootns": "bwrap-rootns"}[self.variant] if self.name == "bwrap" else self.name

    @property
    def label(self) -> str:
        extra = [x for x in (self.variant, "" if self.drop else "as-root") if x]
        return self.name + ("(%s)" % ",".join(extra) if extra else "")

    def command(self, python: str, allow_exec: bool = False) -> _Command:
        """Command line, the fds it needs passed (bind sources, seccomp program), and for bwrap
        the pipe its --info-fd JSON (the worker's host pid) arrives on."""
        root = os.getuid() == 0
        setpriv = _SETPRIV if (root and self.drop) else []
        if self.name in ("none", "unshare"):
            # The worker applies seccomp per child itself, from filters built here: the
            # interpreter it runs (-I, the base Python) does not see this venv's pyseccomp.
            fds = _child_filters_fd()
            worker = [python, "-I", "-B", WORKER_PATH] + ["--filters-fd=%d" % fd for fd in fds]
            if self.name == "none":
                return _Command(setpriv + worker, fds, None)
            ns = ["--net", "--pid", "--fork", "--ipc", "--uts", "--mount", "--mount-proc",
                  "--kill-child"]
            user = [] if root else ["--user", "--map-current-user"]
            return _Command(["unshare"] + user + ns + ["--"] + setpriv + worker +
                            ["--private-pidns"], fds, None)
        fds: list[int] = []
        try:
            return self._bwrap(python, setpriv, allow_exec, fds)
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise

    def _bwrap(self, python, setpriv, allow_exec, fds):
        args = ["--die-with-parent", "--new-session", "--hostname", "sandbox", "--as-pid-1"]
        if self.variant == "rootns":  # root without user namespace: drop inside instead
            args = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
                    "--unshare-cgroup-try"] + args
        else:
            args = ["--unshare-all", "--unshare-user"] + args
            if _bwrap_has("--disable-userns"):  # bwrap >= 0.8
                args.append("--disable-userns")
        made: set[str] = set()

        def parents(dest):  # bwrap creates missing parents 0700: make them traversable
            parts = dest.strip("/").split("/")[:-1]
            for i in range(1, len(parts) + 1):
                parent = "/" + "/".join(parts[:i])
                if parent not in made:
                    made.add(parent)
                    args.extend(["--perms", "0755", "--dir", parent])

        # A private /tmp and /dev first: later binds below /tmp (an interpreter or venv living
        # there, as on any CI runner) are mounted on top of the empty tmpfs, not hidden by it.
        size = ["--size", str(256 << 20)] if _bwrap_has("--size") else []
        args += ["--dev", "/dev"] + size + ["--perms", "1777", "--tmpfs", "/tmp"]
        # Libraries and data, but no /usr/bin, /bin, /sbin: there is little to exec unless
        # allow_exec.  Everything exec'd would stay inside bwrap + seccomp anyway.
        system = (["/usr", "/bin", "/sbin"] if allow_exec else
                  ["/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/local/lib", "/usr/share"])
        system += ["/lib", "/lib64", "/lib32", "/etc/ld.so.cache", "/etc/localtime"]
        roots = _python_roots(python)
        if not allow_exec and not any(python.startswith(r + "/") for r in roots):
            system.append(python)  # e.g. /usr/bin/python3.11
        for path in system:
            if os.path.exists(path):
                parents(path)
                args += ["--ro-bind", path, path]
        binds = [(p, p) for p in roots] + [(WORKER_PATH, _SANDBOX_WORKER)]
        for src, dest in binds:
            fd = os.open(src, os.O_PATH | os.O_CLOEXEC)  # opened by us: /root may be 0700
            fds.append(fd)
            parents(dest)
            args += ["--ro-bind-fd", str(fd), dest]
        # no /proc at all: nothing like /proc/self/mem for the program to read; the root itself
        # read-only, so a program can't add files next to the binds (/usr/x, /etc/x) either
        args += ["--remount-ro", "/", "--chdir", "/tmp", "--clearenv"]
        for key, value in _ENV.items():
            args += ["--setenv", key, value]
        keep = [dest for _, dest in binds if dest.startswith("/tmp/")]
        inner = [python, "-I", "-B", _SANDBOX_WORKER, "--private-pidns", "--private-tmp",
                 "--keep=" + json.dumps(keep)]
        bpf = _seccomp_program()
        if bpf is not None:  # loaded by bwrap, so the worker never needs ctypes
            fd = os.memfd_create("evalkit-seccomp", 0)
            fds.append(fd)
            os.write(fd, bpf)
            os.lseek(fd, 0, os.SEEK_SET)
            args += ["--seccomp", str(fd)]
            inner.append("--external-seccomp")
        info_r, info_w = os.pipe()  # bwrap reports the worker's host pid here
        fds.append(info_w)
        args += ["--info-fd", str(info_w)]
        if self.variant == "rootns":  # python starts as root in the sandbox and drops at once
            return _Command([_BWRAP] + args + ["--"] + inner + ["--drop-uid=%d" % NOBODY], fds,
                            info_r)
        return _Command(setpriv + [_BWRAP] + args + ["--"] + inner, fds, info_r)


_bwrap_help: dict[str, str] = {}


def _bwrap_has(flag: str) -> bool:
    """Whether this bwrap knows ``flag`` (bwrap >= 0.5 is assumed for --perms/--ro-bind-fd)."""
    if _BWRAP not in _bwrap_help:
        try:
            out = subprocess.run([_BWRAP, "--help"], capture_output=True, text=True, timeout=10,
                                 check=False)
            _bwrap_help[_BWRAP] = out.stdout + out.stderr
        except (OSError, subprocess.SubprocessError):
            _bwrap_help[_BWRAP] = ""
    return flag in _bwrap_help[_BWRAP]


_filter: list[bytes | None] = []


def _seccomp_program() -> bytes | None:
    """The worker-wide seccomp BPF that bwrap loads (None without a seccomp binding here).
    It must allow execve: bwrap applies it *before* exec'ing the worker.  Programs are kept
    from exec by the audit hook, by the missing binaries, and what they exec stays confined."""
    if not _filter:
        sc = _seccomp_module()
        _filter.append(None if sc is None else build_filter(sc, allow_exec=True))
    return _filter[0]


_child_filters: list[bytes] = []


def _child_filters_fd() -> list[int]:
    """[fd] of a memfd holding the per-child seccomp programs as JSON ({"<allow_exec><root>": hex},
    with the placeholder pid the worker patches), or [] without a seccomp binding here."""
    if not _child_filters:
        sc = _seccomp_module()
        progs = {} if sc is None else {
            "%d%d" % (ae, rt): build_filter(sc, bool(ae), bool(rt), self_pid=CHILD_PID_PLACEHOLDER).hex()
            for ae in (0, 1) for rt in (0, 1)}
        _child_filters.append(json.dumps(progs).encode())
    if _child_filters[0] == b"{}":
        return []
    fd = os.memfd_create("evalkit-seccomp-children", 0)
    os.write(fd, _child_filters[0])
    os.lseek(fd, 0, os.SEEK_SET)
    return [fd]


def _python_roots(python: str) -> list[str]:
    """Directories the sandboxed interpreter needs (its prefixes), outside /usr."""
    roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                           os.path.dirname(os.path.dirname(python)))}
    keep = []
    for p in sorted(roots, key=len):
        if p in ("/", "/usr") or p.startswith("/usr/") or any(p.startswith(k + "/") for k in keep):
            continue
        keep.append(p)
    return keep


def _candidates(forced: str | None) -> list[_Layer]:
    root = os.getuid() == 0
    layers = [_Layer("bwrap")]
    if root:
        layers.append(_Layer("bwrap", "rootns"))
    layers += [_Layer("unshare"), _Layer("none")]
    if root:  # last resorts: keep uid 0 (python unreachable for nobody); loudly reported
        layers += [_Layer("unshare", drop=False), _Layer("none", drop=False)]
    if forced and forced != "auto":
        if forced not in LAYER_NAMES:
            raise ValueError("unknown sandbox layer %r (%s)" % (forced, ", ".join(LAYER_NAMES)))
        layers = [layer for layer in layers if forced in (layer.name, layer.key)]
    tools = {"bwrap": _BWRAP, "unshare": "unshare"}
    if root and not shutil.which("setpriv"):  # rootns drops uid inside, the others need it
        layers = [layer for layer in layers if not layer.drop or layer.variant == "rootns"]
    return [layer for layer in layers
            if layer.name not in tools or shutil.which(tools[layer.name])]
