"""A tiny OpenAI-compatible server on 127.0.0.1 that fails on purpose.

It serves ``/v1/models`` and ``/v1/completions`` (and ``/v1/chat/completions``) for one model name.
Healthy replies are fixed text: for a GSM8K prompt ("Question: ...\\nAnswer:") the answer from the
``answers`` table (question -> text), else "#### 0". A script of faults, consumed one per
completion request, replaces replies: an HTTP status with a body, a raw body (not JSON, a JSON
list), a reply whose ``choices`` carry no ``text``, ``choices: []``, a stall past the client's
timeout, or a completion without echo logprobs. Bounded: every connection has a socket timeout,
the server counts what it answered and stops serving after ``max_requests``.
"""
from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional

MODEL = "fake"


def healthy_text(prompt: str, answers: dict) -> str:
    qs = re.findall(r"Question: (.*?)\nAnswer:", prompt, flags=re.S)
    return answers.get(qs[-1].strip(), " #### 0") if qs else " #### 0"


class FaultServer:
    def __init__(self, answers: Optional[dict] = None, max_requests: int = 500, echo_logprobs: bool = False,
                 models_reply=None):
        self.answers = dict(answers or {})
        self.faults: list = []            # consumed one per completion request
        self.fault_all = None             # a fault for every completion request (a broken server)
        self.echo_logprobs = echo_logprobs
        self.models_reply = models_reply  # override of the /v1/models body (bytes or object)
        self.max_requests, self.served = max_requests, 0
        self.paths, self.auth, self.bodies = [], [], []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 10  # a stuck client cannot hold a handler thread for long

            def log_message(self, *a):
                pass

            def _send(self, status: int, body: bytes, ctype="application/json"):
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout, a kill)
                    pass

            def do_GET(self):
                with server.lock:
                    server.paths.append(self.path)
                    server.auth.append(self.headers.get("Authorization"))
                if self.path.split("?")[0].rstrip("/").endswith("/models"):
                    reply = server.models_reply
                    if reply is None:
                        reply = {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "tests",
                                                             "max_model_len": 4096}]}
                    self._send(200, reply if isinstance(reply, bytes) else json.dumps(reply).encode())
                else:
                    self._send(404, b'{"error": {"message": "no such route"}}')

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with server.lock:
                    server.served += 1
                    server.paths.append(self.path)
                    server.auth.append(self.headers.get("Authorization"))
                    server.bodies.append(body)
                    if server.served > server.max_requests:
                        fault = ("status", 503, {"error": {"message": "request budget of the test server spent"}})
                    elif server.faults:
                        fault = server.faults.pop(0)
                    else:
                        fault = server.fault_all
                if fault is not None:
                    return self._fault(fault, body)
                self._send(200, json.dumps(server.reply(body, self.path)).encode())

            def _fault(self, fault, body):
                kind = fault[0]
                if kind == "status":
                    _, status, payload = fault
                    return self._send(status, json.dumps(payload).encode())
                if kind == "raw":
                    return self._send(200, fault[1], fault[2] if len(fault) > 2 else "application/json")
                if kind == "stall":
                    time.sleep(fault[1])
                    return self._send(200, json.dumps(server.reply(body, self.path)).encode())
                if kind == "json":
                    return self._send(200, json.dumps(fault[1]).encode())
                if kind == "no_text":
                    reply = server.reply(body, self.path)
                    for c in reply["choices"]:
                        c.pop("text", None)
                        c.pop("message", None)
                    return self._send(200, json.dumps(reply).encode())
                raise ValueError(kind)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    # ---- healthy replies ---------------------------------------------------------------------------
    def reply(self, body: dict, path: str) -> dict:
        if "messages" in body:
            text = healthy_text(body["messages"][-1]["content"], self.answers)
            return {"object": "chat.completion", "model": MODEL, "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}
        prompts = body["prompt"]
        if not isinstance(prompts, list) or (prompts and isinstance(prompts[0], int)):
            prompts = [prompts]  # one prompt: a string or token ids
        choices = []
        for i, p in enumerate(prompts):
            text = healthy_text(p, self.answers) if isinstance(p, str) else " #### 0"  # (token ids: no lookup)
            c = {"index": i, "text": text, "finish_reason": "stop", "logprobs": None}
            if body.get("echo"):
                c["text"] = p + "x"
                if self.echo_logprobs:  # one "token" per word, each logprob -1
                    words = re.findall(r"\S+|\s+", p)
                    offs = [sum(len(w) for w in words[:k]) for k in range(len(words))]
                    c["logprobs"] = {"tokens": words, "token_logprobs": [None] + [-1.0] * (len(words) - 1),
                                     "top_logprobs": None, "text_offset": offs}
            choices.append(c)
        return {"object": "text_completion", "model": MODEL, "choices": choices}

    # ---- lifecycle ------------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)
