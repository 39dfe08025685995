"""Tool calls run in the sandbox: ``ToolSandbox.call(env, state, name, arguments)``.

Model-chosen arguments are untrusted, so a tool environment's code (``evalkit.taskapi.agent.ToolEnv``)
runs in a sandbox worker, one job per call, under the job's limits (wall and CPU time, address
space, processes, file size, no network). Its state lives between calls as an opaque blob: a pickle
of the state object and the files of the episode's state directory, both made inside the sandbox and
only carried by the parent (which never unpickles it) into the next call. The environment's data
files (``ToolEnv.files``) are read by the parent and handed in as bytes, so the sandbox needs no view
of the host: the venv, the clone and the data may live anywhere (``/tmp`` included).

A call that fails, or a job the sandbox kills (time, memory, fork bomb, an escape attempt), is the
call's error and leaves the state as it was. A job that fails *before* the tool ran (its files, its
code, restoring the state, setting up, a snapshot) means the environment cannot run here: that raises
``ToolSandboxError`` at once, so no run reaches scoring on a broken environment.
"""
from __future__ import annotations

import base64
import json
import os
import secrets
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

from evalkit.util.errors import EvalkitError

from .executor import Sandbox

#: the program around the environment's source: load its files, restore the state (or set it up),
#: say "ready", make the call, write the outcome. The state directory travels as a list of
#: (relative path, bytes or None for a folder): no tarfile, whose extraction filters differ
#: between the Python versions evalkit supports.
_DRIVER = r"""
import base64 as _b64, json as _json, os as _os, pickle as _pickle, sys as _sys, types as _types
_JOB = _json.loads(%(job)r)
_MOD = _types.ModuleType("evalkit_tool_env")
_sys.modules["evalkit_tool_env"] = _MOD
_ENV = _MOD.__dict__
_ENV["FILES"] = {_k: _b64.b64decode(_v) for _k, _v in _JOB["files"].items()}
_os.makedirs("state", exist_ok=True)
_os.chdir("state")
exec(compile(_JOB["source"], "<tool env %%s>" %% _JOB["name"], "exec"), _ENV)
if _JOB["state"]:
    _obj, _tree = _pickle.loads(_b64.b64decode(_JOB["state"]))
    for _rel, _data in _tree:
        if _os.path.isabs(_rel) or ".." in _rel.split("/"):
            raise ValueError("state entry outside the state folder: %%r" %% _rel)
        if _data is None:
            _os.makedirs(_rel, exist_ok=True)
        else:
            with open(_rel, "wb") as _f:
                _f.write(_data)
else:
    _obj = _ENV["setup"](_json.loads(_JOB["config"]))
print("\n" + _JOB["mark"] + "ready", flush=True)
_out = {}
if _JOB["op"] == "call":
    try:
        _res = _ENV["call"](_obj, _JOB["tool"], _JOB["arguments"])
        _out["result"] = _res if isinstance(_res, str) else _json.dumps(_res, ensure_ascii=False, default=repr)
    except Exception as _e:  # an environment's own errors may ask to be shown as their message alone
        _out["error"] = str(_e) if getattr(_e, "evalkit_plain", False) else "%%s: %%s" %% (type(_e).__name__, _e)
if "snapshot" in _ENV and _JOB["snapshot"]:
    _out["snapshot"] = _json.loads(_json.dumps(_ENV["snapshot"](_obj), default=repr))
_tree = []
for _root, _dirs, _names in _os.walk("."):
    _dirs.sort()
    for _n in list(_dirs):
        _p = _os.path.normpath(_os.path.join(_root, _n))
        if _os.path.islink(_p):
            _dirs.remove(_n)
        else:
            _tree.append((_p, None))
    for _n in sorted(_names):
        _p = _os.path.normpath(_os.path.join(_root, _n))
        if _os.path.isfile(_p) and not _os.path.islink(_p):
            with open(_p, "rb") as _f:
                _tree.append((_p, _f.read()))
_out["state"] = _b64.b64encode(_pickle.dumps((_obj, _tree))).decode()
print("\n" + _JOB["mark"] + _json.dumps(_out))
"""


@dataclass
class ToolOutcome:
    """One call: ``result`` (text) or ``error``; the new ``state`` (unchanged after an error that
    killed the job); ``snapshot`` when asked for."""

    result: Optional[str] = None
    error: Optional[str] = None
    state: Optional[str] = None
    snapshot: object = None
    seconds: float = 0.0


class ToolSandboxError(EvalkitError, RuntimeError):
    """The tool environment itself could not run (its files, its code, the sandbox): never a tool's
    answer to the model. Raised at once, so no run reaches scoring on a broken environment."""


def _file_payload(files) -> dict:
    """{key: base64 of the file's bytes}, read by the (trusted) parent; a missing file names itself."""
    out = {}
    for key, path in files:
        try:
            out[key] = _read_b64(str(path), os.stat(path).st_mtime_ns)
        except OSError as e:
            raise ToolSandboxError(f"tool environment data file {path} ({key}) cannot be read: "
                                   f"{e.strerror or e}") from None
    return out


@lru_cache(maxsize=16)
def _read_b64(path: str, _mtime_ns: int) -> str:
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


class ToolSandbox:
    """A pool of sandbox workers for tool calls. ``timeout``/``memory_mb``: per call."""

    def __init__(self, workers: int = 2, timeout: float = 10.0, memory_mb: int = 1024,
                 max_output_bytes: int = 8 << 20, sandbox: Optional[Sandbox] = None):
        self.sandbox = sandbox or Sandbox(workers=workers, timeout=timeout, memory_mb=memory_mb,
                                          max_output_bytes=max_output_bytes)
        self._own = sandbox is None

    @property
    def isolation_layer(self) -> str:
        return self.sandbox.isolation_layer

    def _job(self, env, state: Optional[str], op: str, tool: str = "", arguments=None, snapshot=False) -> ToolOutcome:
        mark = "@@evalkit-tool-" + secrets.token_hex(8) + "@@"
        job = {"source": env.source, "name": env.name, "config": env.config, "state": state or "", "op": op,
               "tool": tool, "arguments": arguments if arguments is not None else {}, "snapshot": snapshot,
               "mark": mark, "files": _file_payload(getattr(env, "files", ()))}
        res = self.sandbox.run(_DRIVER % {"job": json.dumps(job)})
        lines = res.stdout.splitlines()
        line = next((ln for ln in reversed(lines) if ln.startswith(mark) and ln != mark + "ready"), None)
        if res.passed and line is not None:
            out = json.loads(line[len(mark):])
            return ToolOutcome(out.get("result"), out.get("error"), out["state"], out.get("snapshot"), res.duration)
        why = res.error_type or res.status
        detail = res.error_message or (res.stderr.strip().splitlines() or [""])[-1]
        if op != "call" or mark + "ready" not in lines:  # it failed before the tool ran: the environment is broken
            raise ToolSandboxError(
                f"tool environment {env.name!r} cannot run in the sandbox ({self.isolation_layer}): {why}: "
                f"{detail}"[:2000] + _hint(res.stderr))
        # the call itself was stopped (time, memory, processes, an escape attempt): the model's error
        return ToolOutcome(error=f"tool sandbox: {why}: {detail}"[:2000], state=state, seconds=res.duration)

    def start(self, env, snapshot: bool = False) -> ToolOutcome:
        """The environment's initial state (``setup(config)``); raises ``ToolSandboxError`` if it fails."""
        out = self._job(env, None, "setup", snapshot=snapshot)
        if out.error:
            raise ToolSandboxError(f"tool environment {env.name!r} failed to set up: {out.error}")
        return out

    def check(self, env) -> None:
        """Prove before any model work that ``env`` runs here: set up, carry the state through one
        round trip (restore, snapshot) and back. Raises ``ToolSandboxError`` naming the cause."""
        first = self.start(env, snapshot=True)
        self._job(env, first.state, "snapshot", snapshot=True)

    def call(self, env, state: str, name: str, arguments, snapshot: bool = False) -> ToolOutcome:
        return self._job(env, state, "call", name, arguments, snapshot)

    def snapshot(self, env, state: str) -> object:
        return self._job(env, state, "snapshot", snapshot=True).snapshot

    def close(self) -> None:
        if self._own:
            self.sandbox.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _hint(stderr: str) -> str:
    """A fix for the failures a host can cause (not the environment's code)."""
    if "FileNotFoundError" in stderr or "PermissionError" in stderr:
        return (" (the sandbox shows no host files: a tool environment reads its data through "
                "ToolEnv.files, never by path)")
    return ""
