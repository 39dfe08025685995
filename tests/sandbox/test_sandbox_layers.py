"""Every isolation layer this machine can take, forced one at a time: the same verdicts on the same
attacks and the same tool results in each (bubblewrap in a user namespace, bubblewrap as root without
one, util-linux unshare), whichever interpreter and venv run the tests (a venv under /tmp included)."""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import sys

import pytest

from evalkit.sandbox import Sandbox, layers
from evalkit.sandbox.tools import ToolSandbox, ToolSandboxError
from evalkit.taskapi.agent import ToolEnv


def nobody_can_run(path: str) -> bool:
    """Whether uid 65534 can reach and run ``path`` (every folder above it searchable by others)."""
    path = os.path.realpath(path)
    parents = [os.path.dirname(path)]
    while parents[-1] != "/":
        parents.append(os.path.dirname(parents[-1]))
    return bool(os.stat(path).st_mode & 0o005 == 0o005) and all(os.stat(p).st_mode & 0o001 for p in parents)


ROOT = os.getuid() == 0
#: bubblewrap's user-namespace mode runs as uid 65534 from the start: as root with an interpreter under a
#: folder 65534 can't enter (pyenv's under /root) it can't work, and bwrap-rootns is what serves that host
USERNS_OK = not ROOT or nobody_can_run(sys.executable)
LAYERS = (["bwrap-userns"] if USERNS_OK else []) + ["unshare"] + (["bwrap-rootns"] if ROOT else [])

#: a tool environment that reads a data file (handed in as FILES), keeps state in memory and in its
#: state folder, and reports both
ENV_SOURCE = '''
import json, os
def setup(config):
    return {"rows": json.loads(FILES["db"])["rows"], "calls": 0}
def call(state, name, arguments):
    state["calls"] += 1
    if name == "append":
        with open("log.txt", "a") as f:
            f.write(arguments["text"] + "\\n")
        return {"calls": state["calls"], "log": open("log.txt").read().splitlines()}
    if name == "lookup":
        return state["rows"][arguments["i"]]
    raise ValueError("no tool " + name)
def snapshot(state):
    return {"calls": state["calls"], "log": open("log.txt").read() if os.path.exists("log.txt") else ""}
'''


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    # a path with a space, under the test's temp folder (/tmp here): the sandbox never sees it, the
    # parent reads it
    folder = tmp_path_factory.mktemp("tool data")
    path = folder / "db file.json"
    path.write_text(json.dumps({"rows": ["alpha", "beta", "gamma"]}))
    return path


def _sandbox(layer: str) -> Sandbox:
    if layer.startswith("bwrap") and not shutil.which("bwrap"):
        pytest.fail("bubblewrap is missing (scripts/install.sh installs it)")
    try:
        return Sandbox(workers=1, timeout=3.0, layer=layer)
    except RuntimeError as e:
        if layer == "bwrap-userns" and "bwrap" in str(e):
            pytest.skip(f"the kernel refuses unprivileged user namespaces here: {e}")
        raise


@pytest.fixture(scope="module", params=LAYERS)
def layer_box(request):
    box = _sandbox(request.param)
    yield request.param, box
    box.close()


def test_the_forced_layer_runs_our_python_with_seccomp_as_nobody(layer_box):
    layer, box = layer_box
    label = box.isolation_layer
    assert label.startswith(layer.split("-")[0]), label
    if layer == "unshare" and ROOT and not nobody_can_run(sys.executable):
        # an interpreter under /root (pyenv's): unshare can't hand it to uid 65534 as bwrap's binds do, so
        # the worker keeps uid 0, loudly (the weak-isolation warning), still with seccomp and Landlock
        assert re.fullmatch(r"unshare\(as-root\)\+seccomp(\+landlock\d+)?\+rlimits\+uid0", label), label
    else:
        assert "+seccomp+" in label and label.endswith("uid65534"), label
    if layer == "bwrap-rootns":
        assert "rootns" in label
    r = box.run("import sys\nprint(sys.version)")
    assert r.passed and r.stdout.strip() == sys.version, r


ATTACKS = {
    "read a host file": "print(open({secret!r}).read())",
    "read /etc/shadow": "print(open('/etc/shadow').read())",
    "write /usr": "open('/usr/evalkit-escape-{token}', 'w').write('x')",
    "write /etc": "open('/etc/evalkit-escape-{token}', 'w').write('x')",
    "write the home folder": "open({home_file!r}, 'w').write('x')",
    "connect to localhost": "import socket\nsocket.create_connection(('127.0.0.1', 22), timeout=1)",
    "exec a shell": "import os\nos.execv('/bin/sh', ['sh', '-c', 'echo pwned'])",
    "subprocess": "import subprocess\nsubprocess.run(['/bin/sh', '-c', 'echo pwned'])",
    "ptrace-like /proc read": "print(open('/proc/1/environ').read())",
    "ctypes": "import ctypes\nprint(ctypes.CDLL(None))",
    "fake a pass": "import os\nos._exit(0)",
}


def test_every_layer_refuses_the_same_attacks(tmp_path):
    token = secrets.token_hex(6)
    secret = tmp_path / "secret.txt"
    secret.write_text(token)
    os.chmod(secret, 0o644)
    home_file = os.path.expanduser(f"~/evalkit-escape-{token}")
    programs = {name: prog.format(secret=str(secret), token=token, home_file=home_file)
                for name, prog in ATTACKS.items()}
    verdicts = {}
    for layer in LAYERS:
        box = _sandbox(layer)
        try:
            verdicts[layer] = {name: box.run(prog).passed for name, prog in programs.items()}
            assert box.run("print(6 * 7)").stdout == "42\n"
        finally:
            box.close()
        for path in (f"/usr/evalkit-escape-{token}", f"/etc/evalkit-escape-{token}", home_file):
            assert not os.path.exists(path), (layer, path)
    refused = {name: False for name in ATTACKS}
    assert all(v == refused for v in verdicts.values()), verdicts


def test_every_layer_gives_the_same_tool_results(data_file):
    env = ToolEnv("layers-test", ENV_SOURCE, "{}", (("db", str(data_file)),))
    outcomes = {}
    for layer in LAYERS:
        with ToolSandbox(sandbox=_sandbox(layer)) as tools:
            try:
                state = tools.start(env).state
                a = tools.call(env, state, "append", {"text": "one"})
                b = tools.call(env, a.state, "append", {"text": "two"})
                c = tools.call(env, b.state, "lookup", {"i": 2})
                d = tools.call(env, c.state, "nope", {})
                outcomes[layer] = [a.result, b.result, c.result, d.error, tools.snapshot(env, d.state)]
            finally:
                tools.sandbox.close()
    first = next(iter(outcomes.values()))
    assert first[:4] == ['{"calls": 1, "log": ["one"]}', '{"calls": 2, "log": ["one", "two"]}', "gamma",
                         "ValueError: no tool nope"]
    assert first[4] == {"calls": 4, "log": "one\ntwo\n"}
    assert all(o == first for o in outcomes.values()), outcomes


def test_a_broken_environment_stops_at_once_with_its_cause(tmp_path):
    missing = tmp_path / "not there.json"
    env = ToolEnv("broken", ENV_SOURCE, "{}", (("db", str(missing)),))
    with ToolSandbox(workers=1) as tools:
        with pytest.raises(ToolSandboxError, match="not there.json"):
            tools.check(env)
        bad_code = ToolEnv("bad-code", "def setup(config):\n    return open('/etc/hostname').read()\n")
        with pytest.raises(ToolSandboxError, match="bad-code.*cannot run in the sandbox"):
            tools.check(bad_code)


def test_userns_mode_with_an_interpreter_nobody_can_reach_fails_and_auto_takes_rootns():
    if USERNS_OK:
        box = _sandbox("bwrap-userns")
        box.close()
        return
    with pytest.raises(RuntimeError, match="bwrap"):
        Sandbox(workers=1, layer="bwrap-userns")
    with Sandbox(workers=1, layer="bwrap") as box:
        assert box.isolation_layer.startswith("bwrap(rootns)+seccomp") and box.isolation_layer.endswith("uid65534")


def test_unknown_layer_is_named():
    with pytest.raises(ValueError, match="bwrap-userns, bwrap-rootns, unshare, none"):
        layers._candidates("bwrap-fast")
