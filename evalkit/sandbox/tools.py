"""Tool calls run in the sandbox: ``ToolSandbox.call(env, state, name, arguments)``.

Model-chosen arguments are untrusted, so a tool environment's code (``evalkit.taskapi.agent.ToolEnv``)
runs in a sandbox worker, one job per call, under the job's limits (wall and CPU time, address
space, processes, file size, no network). Its state lives between calls as an opaque blob: a pickle
of the state object and a tar of the episode's state directory, both made inside the sandbox and
only carried by the parent (which never unpickles it) into the next call. A call that fails, or a job
the sandbox kills (time, memory, fork bomb, an escape attempt), is the call's error and leaves the
state as it was.
"""
from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Optional

from .executor import Sandbox

#: the program around the environment's source: restore the state, make the call, write the outcome
_DRIVER = r'''
import base64 as _b64, io as _io, json as _json, os as _os, pickle as _pickle, tarfile as _tarfile
import sys as _sys, types as _types
_JOB = _json.loads(%(job)r)
_MOD = _types.ModuleType("evalkit_tool_env")
_sys.modules["evalkit_tool_env"] = _MOD
_ENV = _MOD.__dict__
_os.makedirs("state", exist_ok=True)
_os.chdir("state")
exec(compile(_JOB["source"], "<tool env %%s>" %% _JOB["name"], "exec"), _ENV)
if _JOB["state"]:
    _obj, _tar = _pickle.loads(_b64.b64decode(_JOB["state"]))
    with _tarfile.open(fileobj=_io.BytesIO(_tar)) as _t:
        _t.extractall(".", filter="data")
else:
    _obj = _ENV["setup"](_json.loads(_JOB["config"]))
_out = {}
if _JOB["op"] == "call":
    try:
        _res = _ENV["call"](_obj, _JOB["tool"], _JOB["arguments"])
        _out["result"] = _res if isinstance(_res, str) else _json.dumps(_res, ensure_ascii=False, default=repr)
    except Exception as _e:  # an environment's own errors may ask to be shown as their message alone
        _out["error"] = str(_e) if getattr(_e, "evalkit_plain", False) else "%%s: %%s" %% (type(_e).__name__, _e)
if "snapshot" in _ENV and _JOB["snapshot"]:
    _out["snapshot"] = _json.loads(_json.dumps(_ENV["snapshot"](_obj), default=repr))
_buf = _io.BytesIO()
with _tarfile.open(fileobj=_buf, mode="w") as _t:
    _t.add(".", arcname=".")
_out["state"] = _b64.b64encode(_pickle.dumps((_obj, _buf.getvalue()))).decode()
print("\n" + _JOB["mark"] + _json.dumps(_out))
'''


@dataclass
class ToolOutcome:
    """One call: ``result`` (text) or ``error``; the new ``state`` (unchanged after an error that
    killed the job); ``snapshot`` when asked for."""

    result: Optional[str] = None
    error: Optional[str] = None
    state: Optional[str] = None
    snapshot: object = None
    seconds: float = 0.0


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
               "mark": mark}
        res = self.sandbox.run(_DRIVER % {"job": json.dumps(job)})
        line = next((ln for ln in reversed(res.stdout.splitlines()) if ln.startswith(mark)), None)
        if not res.passed or line is None:
            why = res.error_type or res.status
            detail = (res.error_message or res.stderr.strip().splitlines()[-1:] or [""])
            detail = detail if isinstance(detail, str) else detail[0]
            return ToolOutcome(error=f"tool sandbox: {why}: {detail}"[:2000], state=state, seconds=res.duration)
        out = json.loads(line[len(mark):])
        return ToolOutcome(out.get("result"), out.get("error"), out["state"], out.get("snapshot"), res.duration)

    def start(self, env, snapshot: bool = False) -> ToolOutcome:
        """The environment's initial state (``setup(config)``)."""
        out = self._job(env, None, "setup", snapshot=snapshot)
        if out.error:
            raise RuntimeError(f"tool environment {env.name!r} failed to set up: {out.error}")
        return out

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
