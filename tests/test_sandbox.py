"""Tests for evalkit.sandbox: functional behaviour, then an attack suite.

Every attack test asserts that the attack is contained AND that the same sandbox (same worker
processes where that matters) still runs a normal program afterwards.
"""

import os
import secrets
import shutil
import socket
import tempfile
import textwrap
import threading
import time
import warnings

import pytest

from evalkit.sandbox import ExecResult, Sandbox, isolation_layer
from evalkit.sandbox import executor

SECRET_ENV = "secret-token-" + secrets.token_hex(8)


@pytest.fixture(scope="module")
def sb():
    old = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = SECRET_ENV  # set before the workers start
    box = Sandbox(workers=2, timeout=3.0, max_output_bytes=8192)
    yield box
    box.close()
    if old is None:
        os.environ.pop("OPENAI_API_KEY", None)
    else:
        os.environ["OPENAI_API_KEY"] = old


def strong(sb):
    return sb.isolation_layer.startswith("bwrap")


def assert_alive(sb, pids=None):
    r = sb.run("print('alive', 6 * 7)")
    assert r.passed and r.stdout == "alive 42\n", r
    if pids is not None:  # contained without needing a worker restart
        assert [w.proc.pid for w in sb._workers] == pids


def worker_pids(sb):
    return [w.proc.pid for w in sb._workers]


def humaneval_program(body, test="def check(candidate):\n    assert candidate(2) == 4\n"):
    return f"def double(x):\n{textwrap.indent(textwrap.dedent(body), '    ')}\n{test}\ncheck(double)\n"


# ----------------------------------------------------------------------------- functional
def test_isolation_layer_reported(sb):
    layer = isolation_layer()
    assert layer == sb.isolation_layer
    assert layer.split("+")[0] in ("bwrap", "bwrap(rootns)", "unshare", "none")
    assert "rlimits" in layer
    if shutil.which("bwrap"):
        assert strong(sb), layer  # bubblewrap installed: it must be the active layer here
        assert "+seccomp+" in layer and layer.endswith("uid65534")


def test_pass_fail_exception_syntax(sb):
    res = sb.run_many([
        "x = 1\nassert x == 1\nprint('hi')",
        "assert 1 == 2, 'nope'",
        "raise ValueError('bad value')",
        "def f(:\n  pass",
    ])
    assert all(isinstance(r, ExecResult) for r in res)
    assert (res[0].status, res[0].passed, res[0].stdout) == ("passed", True, "hi\n")
    assert (res[1].status, res[1].error_type, res[1].error_message) == ("failed", "AssertionError", "nope")
    assert (res[2].status, res[2].error_type) == ("failed", "ValueError")
    assert "bad value" in res[2].stderr
    assert (res[3].status, res[3].error_type) == ("failed", "SyntaxError")
    assert not any(r.passed for r in res[1:])


def test_timeout(sb):
    start = time.monotonic()
    r = sb.run("while True:\n    pass", timeout=1.0)
    assert (r.status, r.passed, r.error_type) == ("timeout", False, "Timeout")
    assert time.monotonic() - start < 3.0
    assert_alive(sb)


def test_run_many_preserves_order(sb):
    programs = [f"import time\ntime.sleep({(12 - i) * 0.01})\nprint({i})" for i in range(12)]
    res = sb.run_many(programs)
    assert [r.stdout for r in res] == [f"{i}\n" for i in range(12)]
    assert all(r.passed for r in res)


def test_thread_safe_concurrent_callers(sb):
    out = {}

    def call(i):
        out[i] = sb.run(f"print({i} * 2)")

    threads = [threading.Thread(target=call, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {i: r.stdout for i, r in out.items()} == {i: f"{i * 2}\n" for i in range(6)}


def test_humaneval_problem_both_modes(sb):
    import gzip
    import json

    path = "/work/shared/data/humaneval/HumanEval.jsonl.gz"
    if not os.path.exists(path):
        pytest.skip("HumanEval data not present")
    with gzip.open(path, "rt") as f:
        probs = [json.loads(next(f)) for _ in range(3)]
    full = [p["prompt"] + p["canonical_solution"] + "\n" + p["test"] + "\n" +
            f"check({p['entry_point']})" for p in probs]
    wrong = [p["prompt"] + "    return None\n" + "\n" + p["test"] + "\n" +
             f"check({p['entry_point']})" for p in probs]
    structured = [{"program": p["prompt"] + p["canonical_solution"], "test": p["test"],
                   "entry_point": p["entry_point"]} for p in probs]
    res = sb.run_many(full + wrong + structured)
    assert [r.passed for r in res] == [True] * 3 + [False] * 3 + [True] * 3


def test_dead_worker_is_restarted_and_job_reported(sb):
    victim = {}

    def kill_soon():
        time.sleep(0.4)
        for w in sb._workers:  # the busy one is whichever runs the sleeper; kill both
            if w.proc is not None:
                victim.setdefault("pids", []).append(w.proc.pid)
                os.killpg(w.proc.pid, 9)

    t = threading.Thread(target=kill_soon)
    t.start()
    r = sb.run("import time\ntime.sleep(5)")
    t.join()
    assert (r.status, r.passed, r.error_type) == ("error", False, "WorkerDied")
    assert_alive(sb)
    assert sb.run_many(["print(1)"] * 4) and all(x.passed for x in sb.run_many(["pass"] * 4))


def test_unresponsive_worker_is_killed(sb):
    import signal

    sb.answer_grace = 0.5
    try:
        threading.Timer(0.2, lambda: [os.killpg(w.proc.pid, signal.SIGSTOP)
                                      for w in sb._workers if w.proc is not None]).start()
        r = sb.run("import time\ntime.sleep(3)", timeout=0.5)
        assert (r.status, r.error_type) == ("error", "WorkerDied")
    finally:
        sb.answer_grace = Sandbox.answer_grace
        for w in sb._workers:
            if w.proc is not None:
                os.killpg(w.proc.pid, signal.SIGCONT)
    assert all(r.passed for r in sb.run_many(["pass"] * 4))


def test_fallback_when_bwrap_fails(monkeypatch):
    """A host where bwrap can't run (e.g. AppArmor): probe fails, loud warning, weaker layer."""
    monkeypatch.setattr(executor, "_BWRAP", "/bin/false")
    monkeypatch.setattr(executor, "_detected", {})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with Sandbox(workers=1, timeout=3.0) as weak:
            assert not weak.isolation_layer.startswith("bwrap")
            assert any("WEAK ISOLATION" in str(w.message) for w in caught)
            assert weak.run("print(1)").passed
            assert not weak.run(humaneval_program("import os\nos._exit(0)")).passed


# ----------------------------------------------------------------------------- attacks
def test_attack_network_localhost(sb):
    pids = worker_pids(sb)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.settimeout(0.3)
    port = listener.getsockname()[1]
    r = sb.run(f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
               "s.sendall(b'exfiltrated')")
    assert not r.passed and r.error_type in ("PermissionError", "ConnectionRefusedError", "OSError")
    with pytest.raises(socket.timeout):
        listener.accept()  # nothing ever arrived
    listener.close()
    assert_alive(sb, pids)


@pytest.mark.parametrize("addr", ["('127.0.0.2', 9)", "('192.0.2.1', 80)"])
def test_attack_network_external(sb, addr):
    r = sb.run(f"import socket\nsocket.create_connection({addr}, timeout=2)")
    assert not r.passed
    assert r.duration < 1.0  # refused at once, no packet waits for a timeout
    r = sb.run("import urllib.request\nurllib.request.urlopen('http://192.0.2.1/', timeout=2)")
    assert not r.passed and r.duration < 1.0
    assert_alive(sb)


def test_attack_read_host_files(sb):
    token = secrets.token_hex(16)
    home = os.path.expanduser("~")
    secret = os.path.join(home, f".evalkit-sandbox-secret-{token[:8]}")
    with open(secret, "w") as f:
        f.write(token)
    os.chmod(secret, 0o644)  # only the sandbox stands between the program and the file
    try:
        for prog in (f"print(open({secret!r}).read())",
                     "print(open('/etc/shadow').read())",
                     f"import os\nprint(os.listdir({home!r}))",
                     "print(open('/proc/1/environ').read())"):
            r = sb.run(prog)
            assert not r.passed, prog
            assert token not in r.stdout + r.stderr
            assert "root:" not in r.stdout
    finally:
        os.unlink(secret)
    assert_alive(sb)


def test_attack_environment_secrets(sb):
    r = sb.run("import os\nprint(dict(os.environ))\nprint(os.environ.get('OPENAI_API_KEY'))")
    assert r.passed and SECRET_ENV not in r.stdout and "OPENAI_API_KEY" not in r.stdout
    for prog in ("print(open('/proc/self/environ').read())", "print(open('/proc/2/environ').read())",
                 "print(open('/proc/1/environ').read())"):
        r = sb.run(prog)
        assert SECRET_ENV not in r.stdout + r.stderr
    assert_alive(sb)


def test_attack_write_outside_workdir(sb):
    target = tempfile.mkdtemp(prefix="evalkit-sbx-target-")
    os.chmod(target, 0o777)  # writable for anyone: only the sandbox can stop the write
    token = secrets.token_hex(8)
    try:
        for path in (os.path.join(target, "pwned"), f"/tmp/evalkit-escape-{token}",
                     "/usr/evalkit-escape", os.path.expanduser(f"~/evalkit-escape-{token}")):
            r = sb.run(f"open({path!r}, 'w').write('x')\nprint('wrote')")
            assert not os.path.exists(path), path
            if strong(sb) and not path.startswith("/tmp/"):
                assert not r.passed
        assert os.listdir(target) == []
        r = sb.run("open('ok.txt', 'w').write('fine')\nprint(open('ok.txt').read())")
        assert r.passed and r.stdout == "fine\n"  # its own work dir is writable
    finally:
        shutil.rmtree(target)
    assert_alive(sb)


def test_attack_signal_parent(sb):
    pids = worker_pids(sb)
    me = os.getpid()
    for prog in ("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)",
                 "import os, signal\nos.killpg(os.getpgid(os.getppid()), signal.SIGKILL)",
                 "import os, signal\nos.kill(-1, signal.SIGKILL)",
                 "import os, signal\nos.kill(1, signal.SIGKILL)",
                 f"import os, signal\nos.kill({me}, signal.SIGKILL)",
                 f"import os, signal\nos.kill({pids[0]}, signal.SIGKILL)",
                 "import os\nos.system('kill -9 -1')"):
        r = sb.run(prog)
        assert not r.passed, prog
    assert os.getpid() == me
    assert_alive(sb, pids)


def test_attack_fork_bomb(sb):
    pids = worker_pids(sb)
    start = time.monotonic()
    r = sb.run("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
               timeout=2.0)
    assert not r.passed
    assert time.monotonic() - start < 6.0
    assert_alive(sb, pids)


def test_attack_memory_bomb(sb):
    pids = worker_pids(sb)
    r = sb.run("chunks = []\nwhile True:\n    chunks.append(bytearray(50 << 20))")
    assert not r.passed and r.error_type in ("MemoryError", "Killed:SIGKILL")
    assert not sb.run("x = ' ' * (1 << 40)").passed
    assert_alive(sb, pids)


def test_attack_cpu_loop(sb):
    pids = worker_pids(sb)
    r = sb.run("import threading\nwhile True:\n    pass", timeout=1.0)
    assert r.status == "timeout"
    assert_alive(sb, pids)


def test_attack_huge_stdout(sb):
    pids = worker_pids(sb)
    r = sb.run("import sys\nwhile True:\n    sys.stdout.write('x' * 65536)")
    assert not r.passed and r.error_type == "OutputLimitExceeded"
    assert len(r.stdout) <= 2 * 8192
    r = sb.run("import os\nwhile True:\n    os.write(2, b'y' * 65536)")
    assert not r.passed and len(r.stderr) <= 2 * 8192
    assert_alive(sb, pids)


def test_attack_subprocess_and_exec(sb):
    pids = worker_pids(sb)
    for prog in ("import subprocess\nsubprocess.run(['/bin/sh', '-c', 'echo pwned'])",
                 "import os\nos.system('echo pwned')",
                 "import os\nos.execv('/bin/sh', ['sh', '-c', 'echo pwned'])",
                 "import os\nos.posix_spawn('/bin/sh', ['sh', '-c', 'echo pwned'], {})",
                 # below the audit hook: seccomp refuses the execve itself
                 "import _posixsubprocess, os\nr, w = os.pipe()\n"
                 "pid = _posixsubprocess.fork_exec([b'/bin/sh', b'-c', b'echo pwned'], [b'/bin/sh'], "
                 "True, (w,), None, None, -1, -1, -1, -1, -1, -1, r, w, True, False, -1, None, "
                 "None, None, -1, None, False)\nos.waitpid(pid, 0)\nos.close(w)\n"
                 "print('exec error:', os.read(r, 200))"):
        r = sb.run(prog)
        assert "pwned" not in r.stdout + r.stderr, prog
    assert_alive(sb, pids)


# ----------------------------------------------------------------------------- exit hacks
@pytest.mark.parametrize("body", [
    "import os\nos._exit(0)",
    "import sys\nsys.exit(0)",
    "raise SystemExit(0)",
    "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
    "import threading, os\nthreading.Thread(target=lambda: os._exit(0)).start()\nimport time\ntime.sleep(1)",
    "import atexit, os\natexit.register(lambda: os._exit(0))\nraise SystemExit(0)",
])
def test_exit_hacks_never_pass(sb, body):
    wrong = "return x + 1  # wrong, check() would fail"
    r = sb.run(humaneval_program(body + "\n" + wrong))
    assert r.status != "passed" and not r.passed, r
    p = humaneval_program(body + "\n" + wrong)
    r = sb.run(p.split("def check")[0], test="def check(candidate):\n    assert candidate(2) == 4\n",
               entry_point="double")
    assert not r.passed, r


def test_forged_pass_token_rejected(sb):
    for prog in ("import os\nos.write(3, b'PASS ' + b'0' * 64)\nos._exit(0)",
                 "import os\nprint(os.read(4, 100))",  # token fd is closed before the program runs
                 "import gc\nprint(len(gc.get_objects()))",
                 "import sys\nprint(sys._getframe(1).f_locals)",
                 "try:\n    raise ValueError\nexcept ValueError as e:\n    print(e.__traceback__.tb_frame.f_back.f_locals)",
                 "import ctypes",
                 "print(open('/proc/self/mem', 'rb').read(1))",
                 "import os\nos.write(3, open('/proc/self/fd/4').read().encode())\nos._exit(0)"):
        r = sb.run(prog)
        assert not r.passed, prog


def test_monkeypatching_builtins_cannot_fake_a_pass(sb):
    test = "def check(candidate):\n    assert abs(candidate(2) - 4) < 1e-9\n    assert isinstance(candidate(1), int)\n"
    evil_module_level = "import builtins\nbuiltins.abs = lambda x: 0\nbuiltins.isinstance = lambda *a: True\n"
    cand = evil_module_level + "def double(x):\n    return 'wrong'\n"
    assert not sb.run(cand + test + "check(double)\n").passed  # single program
    assert not sb.run(cand, test=test, entry_point="double").passed  # structured
    # patching the namespace's own __builtins__ or sys.modules: structured mode is immune
    for evil in ("__builtins__['abs'] = lambda x: 0\n",
                 "import sys, types\nm = types.ModuleType('math')\nm.isclose = lambda *a, **k: True\n"
                 "sys.modules['math'] = m\n"):
        cand = evil + "def double(x):\n    return 'wrong'\n"
        t = "import math\ndef check(candidate):\n    assert math.isclose(candidate(2), 4)\n    assert abs(candidate(2) - 4) < 1\n"
        assert not sb.run(cand, test=t, entry_point="double").passed
    # an honest candidate still passes with the same test
    assert sb.run("def double(x):\n    return 2 * x\n", test=test, entry_point="double").passed


def test_tampering_with_the_checker(sb):
    test = "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(3) == 6\n"
    attacks = [
        # replace check before the tests run (module level) / from inside the candidate
        "check = lambda c: None\nimport builtins\nbuiltins.check = lambda c: None\n"
        "def double(x):\n    return 0\n",
        "def double(x):\n    globals()['check'] = lambda c: None\n    return 0\n",
        # reach the running checker's frame and skip its asserts
        "import sys\ndef double(x):\n    f = sys._getframe(1)\n    f.f_globals['check'] = None\n    return 0\n",
        "import sys\ndef tracer(frame, event, arg):\n    return tracer\n"
        "def double(x):\n    sys.settrace(tracer)\n    return 0\n",
        # __eq__ that tampers instead of comparing
        "import os\nclass Evil:\n    def __eq__(self, other):\n        os._exit(0)\n"
        "def double(x):\n    return Evil()\n",
        "class Evil:\n    def __eq__(self, other):\n        raise SystemExit(0)\n"
        "def double(x):\n    return Evil()\n",
        "import sys\nclass Evil:\n    def __eq__(self, other):\n"
        "        sys._getframe(1).f_locals.clear()\n        return True\n    __hash__ = None\n"
        "    def __bool__(self):\n        raise SystemExit(0)\n"
        "def double(x):\n    return Evil()\n",
    ]
    for cand in attacks:
        assert not sb.run(cand + test + "check(double)\n").passed, cand
        assert not sb.run(cand, test=test, entry_point="double").passed, cand
    assert_alive(sb)
