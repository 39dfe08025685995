"""``evalkit reward-server``: OpenRLHF's remote reward protocol over evalkit's verifiers.

``POST /get_reward`` (also ``/``) with ``{"query": [...], "prompts": [...], "labels": [...]}``
answers ``{"rewards", "scores", "extra_logs", "reasons", "verifier"}`` (see ``evalkit.rl.openrlhf``).
``GET /health`` and ``GET /info`` (tasks, verifier hashes, options). Binds 127.0.0.1 unless told
otherwise; at most ``max_concurrency`` batches are scored at once (others wait up to
``queue_timeout`` seconds, then get 503); bodies over ``max_body_mb`` get 413; malformed bodies 400
with the reason.
"""
from __future__ import annotations

import json
import logging
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional, Sequence

from evalkit.rl.openrlhf import BadRequest, check_body, score
from evalkit.rl.verifier import shared_verifier
from evalkit.util.errors import ConfigError

log = logging.getLogger(__name__)


class RewardServer(ThreadingHTTPServer):
    daemon_threads = True
    #: connections waiting to be accepted (the socketserver default of 5 reset clients under load)
    request_queue_size = 256

    def __init__(self, tasks: Sequence[str], host: str = "127.0.0.1", port: int = 0, max_concurrency: int = 4,
                 max_body_mb: float = 64, queue_timeout: float = 300, **options):
        self.tasks, self.options = list(tasks), options
        if int(max_concurrency) < 1:
            raise ConfigError(f"--max-concurrency {max_concurrency}: must be >= 1")
        if not 0 <= int(port) <= 65535:
            raise ConfigError(f"--port {port}: must be between 0 and 65535")
        self.verifiers = {t: shared_verifier(t, **options) for t in self.tasks}  # fail early on a bad task
        self.slots = threading.BoundedSemaphore(max_concurrency)
        self.max_body = int(max_body_mb * 1024 * 1024)
        self.queue_timeout = queue_timeout
        self.max_concurrency = max_concurrency
        super().__init__((host, port), _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/get_reward"

    def info(self) -> dict:
        return {"tasks": self.tasks, "verifier": {t: v.certificate() for t, v in self.verifiers.items()},
                "max_concurrency": self.max_concurrency}


class _Handler(BaseHTTPRequestHandler):
    server: RewardServer
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet by default; -v shows requests
        log.info("%s %s", self.address_string(), fmt % args)

    def _send(self, status: int, obj: dict, headers: Optional[dict] = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: HTTPStatus, msg: str, headers: Optional[dict] = None) -> None:
        self._send(status, {"error": msg, "status": int(status)}, headers)

    def do_GET(self):
        if self.path == "/health":
            return self._send(200, {"ok": True})
        if self.path == "/info":
            return self._send(200, self.server.info())
        self._error(HTTPStatus.NOT_FOUND, f"no route {self.path}; POST /get_reward, GET /health, GET /info")

    def do_POST(self):
        if self.path not in ("/get_reward", "/"):
            return self._error(HTTPStatus.NOT_FOUND, f"no route {self.path}; POST /get_reward")
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            return self._error(HTTPStatus.LENGTH_REQUIRED, "a Content-Length header is required")
        if length < 0:
            self.close_connection = True
            return self._error(HTTPStatus.BAD_REQUEST, f"Content-Length {length} is negative")
        if length > self.server.max_body:
            self.close_connection = True
            return self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                               f"body of {length:,} bytes is over the {self.server.max_body:,}-byte limit")
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            return self._error(HTTPStatus.BAD_REQUEST, f"the body is not JSON: {e}")
        except RecursionError:
            return self._error(HTTPStatus.BAD_REQUEST, "the body's JSON is nested too deep")
        try:
            queries, prompts, labels = check_body(body)
        except BadRequest as e:
            return self._error(HTTPStatus.BAD_REQUEST, str(e))
        if not self.server.slots.acquire(timeout=self.server.queue_timeout):
            return self._error(HTTPStatus.SERVICE_UNAVAILABLE, "all scoring slots busy; retry later",
                               {"Retry-After": "1"})
        try:
            out = score(queries, prompts, labels, self.server.tasks, **self.server.options)
        except BadRequest as e:
            return self._error(HTTPStatus.BAD_REQUEST, str(e))
        finally:
            self.server.slots.release()
        out["verifier"] = {t: v.version_hash for t, v in self.server.verifiers.items()}
        self._send(200, out)


def serve_in_thread(tasks, **kw) -> tuple[RewardServer, threading.Thread]:
    srv = RewardServer(tasks, **kw)
    t = threading.Thread(target=srv.serve_forever, name="evalkit-reward-server", daemon=True)
    t.start()
    return srv, t
