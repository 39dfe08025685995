"""A small OpenAI-compatible server on 127.0.0.1 that answers like a reasoning model.

For a GSM8K question ("Question: ...\\nAnswer:") it looks up a (trace, answer, finish_reason) entry
and replies in one of the forms servers use:

* ``field``: chat replies carry the trace in ``message.reasoning_content`` (vLLM's
  ``--reasoning-parser``, DeepSeek's API) and the answer in ``content``; a reply cut while thinking
  has ``content: null``. ``field_name="reasoning"`` uses the newer field name;
* ``markers``: the whole text, ``<think>trace</think>answer``, in ``content`` / ``text``.

Every reply reports ``usage`` with ``completion_tokens_details.reasoning_tokens`` (one token per
whitespace-separated word). Request bodies are kept in ``bodies``. With ``refuse_sampling`` a body
holding ``temperature``, ``top_p`` or ``max_tokens`` gets HTTP 400, as OpenAI's reasoning models answer.
"""
from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "thinker"
REFUSAL = (b'{"error": {"message": "Unsupported parameter: \'max_tokens\' is not supported with this model. '
           b'Use \'max_completion_tokens\' instead.", "type": "invalid_request_error"}}')


def _words(text) -> int:
    return len((text or "").split()) if isinstance(text, str) else 0


class ReasoningServer:
    def __init__(self, table: dict, form: str = "field", field_name: str = "reasoning_content",
                 refuse_sampling: bool = False, model: str = MODEL):
        self.table, self.form, self.field_name, self.model = table, form, field_name, model
        self.refuse_sampling = refuse_sampling
        self.bodies: list = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 10

            def log_message(self, *a):
                pass

            def _send(self, status: int, body: bytes):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, json.dumps({"object": "list", "data": [
                        {"id": server.model, "object": "model", "max_model_len": 4096}]}).encode())
                else:
                    self._send(404, b'{"error": {"message": "no such route"}}')

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with server.lock:
                    server.bodies.append(body)
                if server.refuse_sampling and any(k in body for k in ("temperature", "top_p", "max_tokens")):
                    return self._send(400, REFUSAL)
                self._send(200, json.dumps(server.reply(body)).encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def _entry(self, text: str):
        qs = re.findall(r"Question: (.*?)\nAnswer:", text, flags=re.S)
        default = ("no idea", "#### 0", "stop")
        return self.table.get(qs[-1].strip(), default) if qs else default

    def reply(self, body: dict) -> dict:
        prompt = body["messages"][-1]["content"] if "messages" in body else body.get("prompt")
        trace, answer, finish = self._entry(prompt if isinstance(prompt, str) else "")
        usage = {"prompt_tokens": _words(prompt), "completion_tokens": _words(trace) + _words(answer),
                 "completion_tokens_details": {"reasoning_tokens": _words(trace)}}
        if self.form == "markers":
            text = f"<think>{trace}</think>{answer}" if answer is not None else f"<think>{trace}"
            if "messages" in body:
                choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
            else:
                choice = {"index": 0, "text": text, "finish_reason": finish, "logprobs": None}
        else:
            msg = {"role": "assistant", "content": answer, self.field_name: trace}
            choice = {"index": 0, "message": msg, "finish_reason": finish}
        return {"object": "chat.completion", "model": self.model, "choices": [choice], "usage": usage}

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)
