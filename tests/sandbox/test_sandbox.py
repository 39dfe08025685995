"""Tests for evalkit.sandbox: functional behaviour, then an attack suite.

Every attack test asserts that the attack is contained AND that the same sandbox (same worker
processes where that matters) still runs a normal program afterwards.
"""

import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import textwrap
import threading
import time
import warnings

import pytest

from evalkit.sandbox import ExecResult, Sandbox, executor, isolation_layer, layers

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


def family(pid):
    """pid and all its descendants (the worker runs a few processes below bwrap)."""
    out, todo = [pid], [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{p}/task/{task}/children") as f:
                    kids = [int(k) for k in f.read().split()]
            except OSError:
                kids = []
            out += kids
            todo += kids
    return out


def signal_workers(sb, sig):
    for w in sb._workers:
        if w.proc is not None:
            for pid in family(w.proc.pid):
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass


CHECK_DOUBLE = "def check(candidate):\n    assert candidate(2) == 4\n"


def src(code):
    return textwrap.dedent(code).lstrip("\n")


def humaneval_program(body, test=CHECK_DOUBLE):
    body = textwrap.indent(textwrap.dedent(body), "    ")
    return f"def double(x):\n{body}\n{test}\ncheck(double)\n"


# ----------------------------------------------------------------------------- functional
def bwrap_works():
    """Can bubblewrap make namespaces on this host at all (not: does our probe like it)?"""
    if not shutil.which("bwrap"):
        return False
    ns = ["--unshare-all"] if os.getuid() else ["--unshare-ipc", "--unshare-pid", "--unshare-net"]
    argv = ["bwrap", *ns, "--ro-bind", "/", "/", "true"]
    return subprocess.run(argv, capture_output=True, timeout=30, check=False).returncode == 0


def test_isolation_layer_reported(sb):
    layer = isolation_layer()
    assert layer == sb.isolation_layer
    assert layer.split("+")[0].split("(")[0] in ("bwrap", "unshare", "none")
    assert "rlimits" in layer
    if bwrap_works():  # then the sandbox must be using it, with seccomp, as nobody
        assert strong(sb), layer
        assert "+seccomp+" in layer and layer.endswith("uid65534"), layer


def test_pass_fail_exception_syntax(sb):
    res = sb.run_many([
        "x = 1\nassert x == 1\nprint('hi')",
        "assert 1 == 2, 'nope'",
        "raise ValueError('bad value')",
        "def f(:\n  pass",
    ])
    assert all(isinstance(r, ExecResult) for r in res)
    assert (res[0].status, res[0].passed, res[0].stdout) == ("passed", True, "hi\n")
    assert (res[1].status, res[1].error_type) == ("failed", "AssertionError")
    assert res[1].error_message == "nope"
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


def test_humaneval_problem_both_modes(sb, shared_data):
    import gzip
    import json

    path = shared_data / "humaneval" / "HumanEval.jsonl.gz"
    if not path.exists():
        pytest.skip("shared data: HumanEval is not present beside the clone")
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
    def kill_soon():
        time.sleep(0.4)
        signal_workers(sb, signal.SIGKILL)  # whichever runs the sleeper: kill both

    t = threading.Thread(target=kill_soon)
    t.start()
    r = sb.run("import time\ntime.sleep(5)")
    t.join()
    assert (r.status, r.passed, r.error_type) == ("error", False, "WorkerDied")
    assert_alive(sb)
    assert sb.run_many(["print(1)"] * 4) and all(x.passed for x in sb.run_many(["pass"] * 4))


def test_unresponsive_worker_is_killed(sb):
    sb.answer_grace = 0.5
    timer = threading.Timer(0.2, signal_workers, (sb, signal.SIGSTOP))
    try:
        timer.start()
        r = sb.run("import time\ntime.sleep(5)", timeout=2.0)  # the stop lands well before the job's own timeout
        assert (r.status, r.error_type) == ("error", "WorkerDied")
    finally:
        timer.join()
        sb.answer_grace = Sandbox.answer_grace
        signal_workers(sb, signal.SIGCONT)
    assert all(r.passed for r in sb.run_many(["pass"] * 4))


def test_fallback_when_bwrap_fails(monkeypatch):
    """A host where bwrap can't run (e.g. AppArmor): probe fails, loud warning, weaker layer."""
    monkeypatch.setattr(layers, "_BWRAP", "/bin/false")
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
                     "print(open('/proc/1/environ').read())"):
            r = sb.run(prog)
            assert not r.passed, prog
            assert token not in r.stdout + r.stderr
            assert "root:" not in r.stdout
        r = sb.run(f"import os\nprint(os.listdir({home!r}))")  # may exist inside, but empty
        assert os.path.basename(secret) not in r.stdout
    finally:
        os.unlink(secret)
    assert_alive(sb)


def test_attack_environment_secrets(sb):
    r = sb.run("import os\nprint(dict(os.environ))\nprint(os.environ.get('OPENAI_API_KEY'))")
    assert r.passed and SECRET_ENV not in r.stdout and "OPENAI_API_KEY" not in r.stdout
    for prog in ("print(open('/proc/self/environ').read())",
                 "print(open('/proc/2/environ').read())",
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
        assert r.error_type != "WorkerDied", (prog, r)  # refused, or ignored by the kernel
    assert os.getpid() == me
    assert_alive(sb, pids)


def test_attack_fork_bomb(sb):
    pids = worker_pids(sb)
    start = time.monotonic()
    bomb = src("""
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
    """)
    r = sb.run(bomb, timeout=2.0)
    assert not r.passed
    assert time.monotonic() - start < 6.0
    assert_alive(sb, pids)


def test_attack_memory_bomb(sb):
    pids = worker_pids(sb)
    for prog in ("x = ' ' * (1 << 40)", "x = bytearray(1 << 36)", "x = [0] * (1 << 34)"):
        r = sb.run(prog)
        assert (r.passed, r.error_type) == (False, "MemoryError"), prog
    assert_alive(sb, pids)
    with Sandbox(workers=1, timeout=20.0, memory_mb=200) as small:  # a growing bomb, quickly
        r = small.run("chunks = []\nwhile True:\n    chunks.append(bytearray(20 << 20))")
        assert not r.passed and r.error_type in ("MemoryError", "Killed:SIGKILL"), r
        assert small.run("x = bytearray(100 << 20)\nprint(len(x))").passed  # within the limit
        assert_alive(small)


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


def test_attack_closing_and_hijacking_pipes(sb):
    pids = worker_pids(sb)
    for prog in (("import os\nfor fd in range(1024):\n    try:\n        os.close(fd)\n"
                  "    except OSError:\n        pass"),
                 "import os\nos.dup2(1, 3)\nos.dup2(1, 2)",  # the token would land on stdout
                 "import os, sys\nsys.stdout = open(os.devnull, 'w')\nos.close(1)\nos.close(0)"):
        r = sb.run(prog)
        assert r.status in ("failed", "passed") and r.error_type != "SandboxSetupError", (prog, r)
        assert r.status != "passed" or "PASS " not in r.stdout
    assert_alive(sb, pids)


def test_attack_subprocess_and_exec(sb):
    pids = worker_pids(sb)
    below_the_hook = src("""
        import _posixsubprocess, os  # no audit event: seccomp must refuse the execve itself
        r, w = os.pipe()
        pid = _posixsubprocess.fork_exec(
            [b"/bin/sh", b"-c", b"echo pwned"], [b"/bin/sh"], True, (w,), None, None,
            -1, -1, -1, -1, -1, -1, r, w, True, False, -1, None, None, None, -1, None, False)
        os.waitpid(pid, 0)
        os.close(w)
        print("exec error:", os.read(r, 200))
    """)
    for prog in ("import subprocess\nsubprocess.run(['/bin/sh', '-c', 'echo pwned'])",
                 "import os\nos.system('echo pwned')",
                 "import os\nos.execv('/bin/sh', ['sh', '-c', 'echo pwned'])",
                 "import os\nos.posix_spawn('/bin/sh', ['sh', '-c', 'echo pwned'], {})",
                 below_the_hook):
        r = sb.run(prog)
        assert "pwned" not in r.stdout + r.stderr, prog
    r = sb.run(below_the_hook)
    assert not r.passed and "pwned" not in r.stdout
    import importlib.util
    if importlib.util.find_spec("_posixsubprocess").origin == "built-in":  # Debian's Python: no file to alias
        assert sb.run("import _posixsubprocess").error_type == "SandboxImportError"
        assert sb.run("import subprocess\nsubprocess._fork_exec").error_type in ("SandboxImportError",
                                                                                "AttributeError")
    else:
        aliased = src("""
            import importlib.util, sys  # load the C module under another name: still refused
            spec = importlib.util.find_spec("_posixsubprocess")
            alias = importlib.util.spec_from_file_location("x._posixsubprocess", spec.origin)
            print(importlib.util.module_from_spec(alias))
        """)
        assert sb.run(aliased).error_type == "SandboxImportError"
    assert_alive(sb, pids)


# ----------------------------------------------------------------------------- exit hacks
@pytest.mark.parametrize("body", [
    "import os\nos._exit(0)",
    "import sys\nsys.exit(0)",
    "raise SystemExit(0)",
    "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
    ("import threading, os, time\nthreading.Thread(target=os._exit, args=(0,)).start()\n"
     "time.sleep(1)"),
    "import atexit, os\natexit.register(lambda: os._exit(0))\nraise SystemExit(0)",
])
def test_exit_hacks_never_pass(sb, body):
    program = humaneval_program(body + "\nreturn x + 1  # wrong: check() would fail")
    r = sb.run(program)
    assert r.status != "passed" and not r.passed, r
    r = sb.run(program.split("def check")[0], test=CHECK_DOUBLE, entry_point="double")
    assert not r.passed, r


def test_forged_pass_token_rejected(sb):
    for prog in ("import os\nos.write(3, b'PASS ' + b'0' * 64)\nos._exit(0)",
                 "import os\nprint(os.read(4, 100))",  # the token fd is closed by now
                 "import gc\nprint(len(gc.get_objects()))",
                 "import sys\nprint(sys._getframe(1).f_locals)",
                 src("""
                     try:
                         raise ValueError
                     except ValueError as e:
                         print(e.__traceback__.tb_frame.f_back.f_locals)
                 """),
                 "import ctypes",
                 src("""
                     import importlib.util  # _ctypes under another name: still refused
                     spec = importlib.util.find_spec("_ctypes")
                     alias = importlib.util.spec_from_file_location("x._ctypes", spec.origin)
                     m = importlib.util.module_from_spec(alias)
                     class P(m._SimpleCData):
                         _type_ = "z"
                     print(P(id(b"PASS ") + 32).value)
                 """),
                 "print(open('/proc/self/mem', 'rb').read(1))",
                 "import os\nos.write(3, open('/proc/self/fd/4').read().encode())\nos._exit(0)"):
        r = sb.run(prog)
        assert not r.passed, prog


def test_monkeypatching_builtins_cannot_fake_a_pass(sb):
    test = src("""
        def check(candidate):
            assert abs(candidate(2) - 4) < 1e-9
            assert isinstance(candidate(1), int)
    """)
    cand = src("""
        import builtins
        builtins.abs = lambda x: 0
        builtins.isinstance = lambda *a: True
        builtins.AssertionError = KeyError
        def double(x):
            return x + 1
    """)  # a plain exec() of cand + test passes
    assert not sb.run(cand + test + "check(double)\n").passed  # single program
    assert not sb.run(cand, test=test, entry_point="double").passed  # structured
    # rebinding the shared namespace's __builtins__ or faking modules: structured mode only
    math_test = src("""
        import math
        def check(candidate):
            assert math.isclose(candidate(2), 4)
            assert abs(candidate(2) - 4) < 1
    """)
    for evil in ("__builtins__['abs'] = lambda x: 0\n",
                 src("""
                     import sys, types
                     fake = types.ModuleType('math')
                     fake.isclose = lambda *a, **k: True
                     sys.modules['math'] = fake
                 """)):
        cand = evil + "def double(x):\n    return x + 1\n"
        assert not sb.run(cand, test=math_test, entry_point="double").passed
    # an honest candidate still passes with the same tests
    assert sb.run("def double(x):\n    return 2 * x\n", test=test, entry_point="double").passed


TAMPERING = [
    # replace check before the tests run (module level) / from inside the candidate
    """
    check = lambda c: None
    import builtins
    builtins.check = lambda c: None
    def double(x):
        return 0
    """,
    """
    def double(x):
        globals()['check'] = lambda c: None
        return 0
    """,
    # reach the running checker's frame, or trace it and skip its asserts
    """
    import sys
    def double(x):
        sys._getframe(1).f_globals['check'] = None
        return 0
    """,
    """
    import sys
    def tracer(frame, event, arg):
        return tracer
    def double(x):
        sys.settrace(tracer)
        return 0
    """,
    # rebind the harness's own globals (reachable through object.__subclasses__())
    """
    for c in object.__subclasses__():
        for f in vars(c).values():
            g = getattr(f, '__globals__', None)
            if g is not None and '_run_untrusted' in g:
                g.update(_restore_modules=lambda *a: None, callable=lambda x: False,
                         exec=lambda *a: None, RESULT_FD=1)
    def double(x):
        return 0
    """,
    # an __eq__ that tampers instead of comparing
    """
    import os
    class Evil:
        def __eq__(self, other):
            os._exit(0)
    def double(x):
        return Evil()
    """,
    """
    class Evil:
        def __eq__(self, other):
            raise SystemExit(0)
    def double(x):
        return Evil()
    """,
    """
    import sys
    class Evil:
        __hash__ = None
        def __eq__(self, other):
            sys._getframe(1).f_locals.clear()
            return True
    def double(x):
        return Evil()
    """,
]


@pytest.mark.parametrize("attack", TAMPERING)
def test_tampering_with_the_checker(sb, attack):
    test = CHECK_DOUBLE + "    assert candidate(3) == 6\n"
    cand = src(attack)
    assert not sb.run(cand + test + "check(double)\n").passed
    assert not sb.run(cand, test=test, entry_point="double").passed
    assert_alive(sb)
