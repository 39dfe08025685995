"""``evalkit reward-server``: OpenRLHF's remote reward protocol over evalkit's verifiers.

``POST /get_reward`` (also ``/``) with ``{"query": [...], "prompts": [...], "labels": [...]}``
answers ``{"rewards", "scores", "extra_logs", "reasons", "verifier"}`` (see ``evalkit.rl.openrlhf``).
``GET /health`` and ``GET /info`` (tasks, verifier hashes, options). Binds 127.0.0.1 unless told
otherwise; at most ``max_concurrency`` batches are scored at once, at most ``max_queue`` more wait for
a slot (up to ``queue_timeout`` seconds): a request beyond that, or one that waited too long, gets 503
with ``Retry-After`` at once. Bodies over ``max_body_mb`` get 413; malformed requests 4xx with the
reason (a negative or missing Content-Length, invalid or too deeply nested JSON, wrong fields, a body
not sent within ``read_timeout`` seconds: 408); a scoring failure 500. Every error is a JSON reply and
one log line, never a traceback or a dropped connection. The listen backlog (256, the standard
library's default is 5) keeps bursts of new connections from being reset.
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
                 max_body_mb: float = 64, queue_timeout: float = 300, max_queue: int = 256,
                 read_timeout: float = 60, **options):
        self.tasks, self.options = list(tasks), options
        if int(max_concurrency) < 1:
            raise ConfigError(f"--max-concurrency {max_concurrency}: must be >= 1")
        if int(max_queue) < 0:
            raise ConfigError(f"--max-queue {max_queue}: must be >= 0")
        if not 0 <= int(port) <= 65535:
            raise ConfigError(f"--port {port}: must be between 0 and 65535")
        self.verifiers = {t: shared_verifier(t, **options) for t in self.tasks}  # fail early on a bad task
        self.slots = threading.BoundedSemaphore(max_concurrency)
        self.max_body = int(max_body_mb * 1024 * 1024)
        self.queue_timeout = queue_timeout
        self.max_queue, self.read_timeout = int(max_queue), float(read_timeout)
        self._waiting, self._waiting_lock = 0, threading.Lock()
        self.max_concurrency = max_concurrency
        try:
            super().__init__((host, port), _Handler)
        except OSError as e:  # a name that does not resolve, a port in use or not ours to take
            raise ConfigError(f"--host {host} --port {port}: cannot listen there: {e.strerror or e}") from None

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/get_reward"

    def acquire_slot(self) -> bool:
        """A scoring slot, waiting in the bounded queue; False: the queue is full or the wait too long."""
        if self.slots.acquire(blocking=False):
            return True
        with self._waiting_lock:
            if self._waiting >= self.max_queue:
                return False
            self._waiting += 1
        try:
            return self.slots.acquire(timeout=self.queue_timeout)
        finally:
            with self._waiting_lock:
                self._waiting -= 1

    def handle_error(self, request, client_address):
        """One log line, never the standard library's traceback on stderr (a client that went away)."""
        import sys
        e = sys.exc_info()[1]
        log.warning("reward server: request from %s ended: %s: %s", client_address[0], type(e).__name__, e)

    def info(self) -> dict:
        return {"tasks": self.tasks, "verifier": {t: v.certificate() for t, v in self.verifiers.items()},
                "max_concurrency": self.max_concurrency}


class _Handler(BaseHTTPRequestHandler):
    server: RewardServer
    protocol_version = "HTTP/1.1"

    def setup(self):
        self.timeout = self.server.read_timeout  # a client that stops sending frees its thread
        super().setup()

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
        try:
            raw = self.rfile.read(length)
        except TimeoutError:
            raw = b""
        if len(raw) < length:
            self.close_connection = True
            return self._error(HTTPStatus.REQUEST_TIMEOUT, f"the body ended after {len(raw):,} of the "
                                                           f"{length:,} bytes Content-Length announced")
        try:
            body = json.loads(raw.decode("utf-8"))
        except RecursionError:
            return self._error(HTTPStatus.BAD_REQUEST, "the body's JSON is nested too deep")
        except ValueError as e:  # not UTF-8, not JSON, an integer over Python's digit limit
            return self._error(HTTPStatus.BAD_REQUEST, f"the body is not JSON: {str(e)[:200]}")
        try:
            queries, prompts, labels = check_body(body)
        except BadRequest as e:
            return self._error(HTTPStatus.BAD_REQUEST, str(e))
        if not self.server.acquire_slot():
            return self._error(HTTPStatus.SERVICE_UNAVAILABLE, "all scoring slots busy and the queue full; "
                                                               "retry later", {"Retry-After": "1"})
        try:
            out = score(queries, prompts, labels, self.server.tasks, **self.server.options)
        except BadRequest as e:
            return self._error(HTTPStatus.BAD_REQUEST, str(e))
        except RecursionError:
            return self._error(HTTPStatus.BAD_REQUEST, "a label's JSON is nested too deep")
        except Exception as e:  # noqa: BLE001 (any verifier failure: a reply and one log line, never a dropped connection)
            log.warning("reward server: scoring failed: %s: %s", type(e).__name__, e)
            return self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"scoring failed: {type(e).__name__}: {e}"[:300])
        finally:
            self.server.slots.release()
        out["verifier"] = {t: v.version_hash for t, v in self.server.verifiers.items()}
        self._send(200, out)


def serve_in_thread(tasks, **kw) -> tuple[RewardServer, threading.Thread]:
    srv = RewardServer(tasks, **kw)
    t = threading.Thread(target=srv.serve_forever, name="evalkit-reward-server", daemon=True)
    t.start()
    return srv, t
