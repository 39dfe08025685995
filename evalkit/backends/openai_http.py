"""JSON over HTTP(S) for the OpenAI-compatible backend: keep-alive connections, retries with
backoff and full jitter, and errors that name the (redacted) URL and say what to do."""
from __future__ import annotations

import http.client
import json
import logging
import random
import socket
import threading
import time
import urllib.parse
from collections import Counter
from typing import Optional

from evalkit.util.errors import EvalkitError
from evalkit.records.redact import redact_text, redact_url

log = logging.getLogger("evalkit.backends.openai")

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


class BackendError(EvalkitError):
    """The server refused or kept failing; the message says what to do."""


class MalformedReply(BackendError):
    """A reply that is not what the OpenAI API returns (no JSON, no choices, no text): never cached."""


class _Http:
    """JSON over HTTP(S) with one keep-alive connection per thread, retries and backoff."""

    def __init__(self, base_url: str, api_key: Optional[str], timeout: float, max_retries: int,
                 backoff_base: float, backoff_max: float, stats: Counter):
        try:
            u = urllib.parse.urlsplit(base_url)
            port = u.port
        except ValueError as e:
            raise ValueError(f"--base-url {redact_url(base_url)!r}: {e}") from None
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"--base-url {redact_url(base_url)!r}: expected http(s)://host:port/v1")
        self.url_flag = "--base-url"  # where the user gives this server's address (a role's: --judge-args base_url=)
        self.https = u.scheme == "https"
        self.host, self.port = u.hostname, port or (443 if self.https else 80)
        self.prefix = u.path.rstrip("/")
        self.query = u.query  # sent on every request (e.g. Azure's api-version, a gateway's api-key)
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        elif u.username or u.password:  # http://user:key@host: HTTP basic auth, as curl does
            import base64
            pair = f"{urllib.parse.unquote(u.username or '')}:{urllib.parse.unquote(u.password or '')}"
            self._headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        self.timeout, self.max_retries = float(timeout), int(max_retries)
        self.backoff_base, self.backoff_max = float(backoff_base), float(backoff_max)
        self.stats = stats
        self.shown = redact_url(base_url.rstrip("/"))  # what messages and records show
        self._local = threading.local()
        self._lock = threading.Lock()
        self._conns: set = set()  # every thread's open connection, closed by close()
        self.aborted = False

    def _conn(self):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
            conn = self._local.conn = cls(self.host, self.port, timeout=self.timeout)
            with self._lock:
                self._conns.add(conn)
        return conn

    def abort(self) -> None:
        """Cut every open connection now (Ctrl-C): a thread blocked reading a reply that never comes
        fails at once (shutting the socket down wakes it; closing alone would not), and no call
        retries until ``resume``."""
        self.aborted = True
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            sock = getattr(conn, "sock", None)
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self.close()

    def resume(self) -> None:
        self.aborted = False

    def close(self) -> None:
        """Close every thread's keep-alive connection (a later call opens a new one)."""
        with self._lock:
            conns, self._conns, self._local = list(self._conns), set(), threading.local()
        for conn in conns:
            conn.close()

    def _once(self, method: str, path: str, body) -> tuple[int, bytes, object]:
        reused = getattr(self._local, "conn", None) is not None
        conn = self._conn()
        try:
            target = self.prefix + path + (("&" if "?" in path else "?") + self.query if self.query else "")
            conn.request(method, target, body=None if body is None else json.dumps(body).encode(),
                         headers=self._headers)
            resp = conn.getresponse()
            return resp.status, resp.read(), resp.headers
        except BaseException as e:
            conn.close()
            self._local.conn = None
            with self._lock:
                self._conns.discard(conn)
            stale = isinstance(e, (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected))
            if reused and stale and not self.aborted:  # the server closed an idle keep-alive connection: reconnect once
                return self._once(method, path, body)
            raise

    def _count(self, key: str) -> None:
        with self._lock:
            self.stats[key] += 1

    def call(self, method: str, path: str, body=None):
        last, malformed = "", False
        for attempt in range(self.max_retries + 1):
            if self.aborted:
                raise BackendError(f"{method} {self.shown}{path}: interrupted")
            retry_after = None
            try:
                self._count("http_calls")
                status, data, headers = self._once(method, path, body)
            except socket.gaierror as e:  # the host name does not resolve: retrying will not help
                raise BackendError(f"{method} {self.shown}{path}: cannot resolve {self.host} ({e.strerror or e}); "
                                   f"check {self.url_flag} (offline?)") from None
            except (OSError, http.client.HTTPException) as e:  # refused, reset, timeout, bad status line
                last, malformed = f"{type(e).__name__}: {e}", False
            else:
                if status < 300:
                    try:
                        return json.loads(data)
                    except ValueError as e:  # a proxy's HTML page, a cut-off body: retried, then reported
                        last, malformed = f"HTTP {status} with a body that is not JSON ({e}): {data[:80]!r}", True
                else:
                    detail = redact_text(_error_message(data))
                    if status not in RETRY_STATUS:
                        raise BackendError(f"{method} {self.shown}{path} -> HTTP {status}: {detail}"
                                           f"{_HINTS.get(status, '').replace('--base-url', self.url_flag)}")
                    last, malformed = f"HTTP {status}: {detail}", False
                    retry_after = _retry_after(headers)
            if attempt == self.max_retries:
                break
            self._count("retries")
            delay = random.uniform(0, min(self.backoff_max, self.backoff_base * 2 ** attempt))  # full jitter
            if retry_after is not None:
                delay = max(delay, min(retry_after, self.backoff_max))
            log.warning("%s %s failed (%s); retry %d/%d in %.1fs", method, path, last, attempt + 1,
                        self.max_retries, delay)
            time.sleep(delay)
        if malformed:
            raise MalformedReply(f"{method} {self.shown}{path}: {last}")
        hint = (f" Is the server running? Check {self.url_flag}." if "Connection" in last or "refused" in last.lower()
                else "")
        raise BackendError(f"{method} {self.shown}{path} failed after {self.max_retries + 1} attempts; last error: "
                           f"{last}.{hint} Finished work is in the cache: rerun to resume")


_HINTS = {401: " (check the API key: OPENAI_API_KEY, or the variable named by api_key_env=)",
          403: " (the API key may lack access to this model)",
          404: " (check --base-url: it usually ends in /v1)"}


def _error_message(data: bytes) -> str:
    try:
        obj = json.loads(data)
        err = obj.get("error", obj) if isinstance(obj, dict) else obj
        return str(err.get("message", err) if isinstance(err, dict) else err)[:500]
    except ValueError:
        return data[:500].decode("utf-8", "replace")


def _retry_after(headers) -> Optional[float]:
    try:
        return float(headers.get("Retry-After")) if headers and headers.get("Retry-After") else None
    except (TypeError, ValueError):
        return None
