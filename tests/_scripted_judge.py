"""A scripted judge (and answerer) behind a local OpenAI-compatible server on 127.0.0.1.

``ScriptedServer(script)`` answers every chat request with ``script(messages) -> str`` (``messages``:
the request's list of ``{"role", "content"}``; a completion request's prompt comes as one user message), so a test decides each verdict from the prompt it
sees: the tests of the judged benchmarks play a judge this way through evalkit's real ``openai:``
backend, then compare every figure with the benchmark's reference code. The request bodies are kept
(``bodies``) for checks on what the judge was sent.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


class ScriptedServer:
    def __init__(self, script: Callable[[list], str], model: str = "scripted-judge", max_model_len: int = 32768):
        self.script, self.model = script, model
        self.bodies: list = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 10

            def log_message(self, *a):
                pass

            def _send(self, status: int, payload: dict):
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [
                        {"id": server.model, "object": "model", "max_model_len": max_model_len}]})
                else:
                    self._send(404, {"error": {"message": "no such route"}})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with server.lock:
                    server.bodies.append(body)
                chat = "messages" in body
                messages = body["messages"] if chat else [{"role": "user", "content": str(body.get("prompt", ""))}]
                try:
                    text = server.script(messages)
                except Exception as e:  # a broken script is the test's failure, not a hang
                    return self._send(500, {"error": {"message": f"script failed: {e!r}"}})
                n = int(body.get("n") or 1)
                choices = [{"index": i, "finish_reason": "stop",
                            **({"message": {"role": "assistant", "content": text}} if chat else
                               {"text": text, "logprobs": None})} for i in range(n)]
                self._send(200, {"object": "chat.completion" if chat else "text_completion", "model": server.model,
                                 "choices": choices,
                                 "usage": {"prompt_tokens": 1, "completion_tokens": len(text.split())}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def spec(self) -> str:
        """The ``--model``/``--judge`` spec that reaches this server (with ``args()``)."""
        return f"openai:{self.model}"

    def args(self) -> dict:
        return {"base_url": self.base_url}

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)
