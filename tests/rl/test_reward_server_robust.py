"""#38 items 3 and 7 on the OpenRLHF reward server (``evalkit.rl.server``): malformed requests get a
4xx JSON reply (never a traceback or a dropped connection), a full queue answers 503 with
Retry-After at once, and a bounded load of 64 clients on 127.0.0.1 loses nothing, gives the offline
verifier's rewards and keeps memory flat. The server serves verifiers (gsm8k), not a reward model:
the offline path compared against is ``evalkit.rl.openrlhf.score``."""
from __future__ import annotations

import json
import re
import socket
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

pytestmark = pytest.mark.server

LABEL = json.dumps({"question": "2+3?", "answer": "#### 5"})


def _serve(**kw):
    from evalkit.rl.server import serve_in_thread
    srv, _ = serve_in_thread(["gsm8k"], port=0, **kw)
    return srv


def _stop(srv):
    srv.shutdown()
    srv.server_close()


def _raw(srv, head: bytes, body: bytes = b"", timeout: float = 20) -> tuple[int, dict]:
    """One request over a plain socket; (status, JSON body). A dropped connection fails the test."""
    with socket.create_connection(srv.server_address[:2], timeout=timeout) as s:
        s.sendall(head + b"\r\n" + body)
        out = b""
        while b"\r\n\r\n" not in out or len(out.partition(b"\r\n\r\n")[2]) < int(
                re.search(rb"Content-Length: (\d+)", out).group(1)):
            chunk = s.recv(65536)
            assert chunk, f"connection dropped without a reply (got {out[:80]!r})"
            out += chunk
    head_, _, rest = out.partition(b"\r\n\r\n")
    return int(head_.split()[1]), json.loads(rest)


def _post(srv, body: bytes, length=None) -> tuple[int, dict]:
    n = len(body) if length is None else length
    return _raw(srv, b"POST /get_reward HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %s\r\n" % str(n).encode(), body)


def test_malformed_requests_get_a_json_4xx_and_no_traceback(capfd):
    """Before: an integer of 5,000 digits and a label nested 100,000 deep were a traceback on stderr and
    no reply; a body shorter than its Content-Length held a thread forever."""
    srv = _serve(max_concurrency=2, read_timeout=1)
    try:
        ok = json.dumps({"query": ["#### 5"], "prompts": [""], "labels": [LABEL]}).encode()
        cases = [
            (b"", -5, 400), (b"{not json", None, 400), (b"[" * 200_000 + b"]" * 200_000, None, 400),
            (b'{"a":' * 200_000 + b"1" + b"}" * 200_000, None, 400), (b"[1, 2]", None, 400),
            (json.dumps({"q": 1}).encode(), None, 400), (b'{"query": ["\xff"]}', None, 400),
            (b'{"query": [' + b"9" * 5000 + b'], "prompts": [""], "labels": ["1"]}', None, 400),
            (json.dumps({"query": ["x"], "prompts": [""], "labels": ["{" + '"a":{' * 100_000]}).encode(), None, 400),
            (json.dumps({"query": ["x"], "prompts": [""],
                         "labels": ['{"task": "gsm8k", "gold": ' + "[" * 200_000 + "]" * 200_000 + "}"]}).encode(),
             None, 400),
            (b"{}", 100, 408),  # the announced body never comes
        ]
        for body, length, want in cases:
            code, reply = _post(srv, body, length)
            assert code == want and reply["status"] == want and reply["error"], (body[:40], reply)
        code, reply = _raw(srv, b"POST /get_reward HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n", b"")
        assert code == 411
        with socket.create_connection(srv.server_address[:2]) as s:  # a client that hangs up mid-request
            s.sendall(b"POST /get_reward HTTP/1.1\r\nContent-Length: 10\r\n\r\n{")
        time.sleep(1.5)
        code, reply = _post(srv, ok)
        assert code == 200 and reply["rewards"] == [1.0]  # still serving
    finally:
        _stop(srv)
    err = capfd.readouterr().err
    assert "Traceback" not in err, err[-2000:]


def test_a_full_queue_answers_503_with_retry_after_at_once(monkeypatch):
    """Before: a request beyond the slots waited up to queue_timeout (300 s) whatever the queue length."""
    from evalkit.rl import server
    gate, entered = threading.Event(), threading.Semaphore(0)
    real = server.score

    def held(*a, **kw):
        entered.release()
        gate.wait(30)
        return real(*a, **kw)
    monkeypatch.setattr(server, "score", held)
    srv = _serve(max_concurrency=1, max_queue=2)
    body = json.dumps({"query": ["#### 5"], "prompts": [""], "labels": [LABEL]}).encode()
    try:
        with ThreadPoolExecutor(3) as pool:
            held_calls = [pool.submit(_post, srv, body) for _ in range(3)]  # 1 scoring, 2 queued
            assert entered.acquire(timeout=10)
            deadline = time.time() + 10
            time.sleep(0.3)
            while getattr(srv, "_waiting", 2) < 2 and time.time() < deadline:
                time.sleep(0.02)
            t0 = time.time()
            req = urllib.request.Request(srv.url, data=body, headers={"Content-Type": "application/json"})
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(req, timeout=5)
            assert time.time() - t0 < 3
            assert e.value.code == 503 and e.value.headers["Retry-After"] == "1"
            assert json.loads(e.value.read())["status"] == 503
            gate.set()
            assert [f.result(timeout=30)[0] for f in held_calls] == [200, 200, 200]
    finally:
        gate.set()
        _stop(srv)


def _rss_kb() -> int:
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("VmRSS")).split()[1])


def test_bounded_load_64_clients_no_reset_offline_rewards_flat_memory():
    """64 clients, each request a new connection, ~3,000 requests time-boxed to 20 s: 0 resets, every
    reward equal to the offline ``score``, RSS after a second round within 30 MB of the first."""
    from evalkit.rl.openrlhf import score
    srv = _serve(max_concurrency=4)
    queries = [f"The answer is #### {k % 7}" for k in range(64 * 48)]
    offline = score(queries, [""] * len(queries), [LABEL] * len(queries), ["gsm8k"])["rewards"]
    stop = time.time() + 20
    resets, statuses = [], []

    def one(k):
        if time.time() > stop:
            return k, None
        body = json.dumps({"query": [queries[k]], "prompts": [""], "labels": [LABEL]}).encode()
        for _ in range(20):
            try:
                req = urllib.request.Request(srv.url, data=body, headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=60) as r:
                    return k, json.loads(r.read())["rewards"][0]
            except urllib.error.HTTPError as e:
                statuses.append(e.code)
                if e.code != 503:
                    raise
                time.sleep(float(e.headers.get("Retry-After", 1)))
            except (ConnectionError, urllib.error.URLError) as e:
                resets.append(repr(e))
                return k, None
        return k, None

    try:
        half = len(queries) // 2
        with ThreadPoolExecutor(64) as pool:
            first = list(pool.map(one, range(half)))
            rss0 = _rss_kb()
            second = list(pool.map(one, range(half, len(queries))))
        rss1 = _rss_kb()
    finally:
        _stop(srv)
    done = [(k, r) for k, r in first + second if r is not None]
    assert resets == [] and statuses == []
    assert len(done) >= 1000, f"only {len(done)} requests in 20 s"
    assert [r for _, r in done] == [offline[k] for k, _ in done]
    assert rss1 - rss0 < 30_000, (rss0, rss1)
    print(f"load: {len(done)} requests, 0 resets, RSS {rss0 // 1024} -> {rss1 // 1024} MB")
