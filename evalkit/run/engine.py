"""The request engine: one big batch per request kind for all tasks of a run.

It dedupes identical requests across tasks, answers what the persistent cache already has, sorts
the rest by length (longest first, so memory trouble shows at once and padding stays small; requests
that share a long few-shot prefix are kept together so a backend can run that prefix once), hands
them to the backend in chunks and commits answers as they finish (per batch, per server reply, or
every ``backend.commit_every_s`` for a streaming engine), each checked first (``response_checks``): a run
killed at any point loses only requests in flight, and nothing malformed is ever cached.
"""
from __future__ import annotations

import logging
import os
import sys
import time
from collections import Counter
from typing import Sequence

from tqdm.auto import tqdm

from evalkit.run import repeats_split, response_checks
from evalkit.backends.base import Backend
from evalkit.backends.shared_prefix import prefix_runs
from evalkit.util.errors import RequestFailure, RequestsFailed
from evalkit.taskapi.requests import GenerateRequest, LoglikelihoodRequest

log = logging.getLogger(__name__)

KIND_ORDER = ("loglikelihood", "loglikelihood_rolling", "generate", "tool_chat", "reward", "embed")


def _sort_key(req):
    # Longest first; loglikelihood requests sharing a context stay adjacent so a backend can score
    # all single-token choices of a question from one forward pass.
    if isinstance(req, LoglikelihoodRequest):
        return (-len(req.context) - len(req.continuation), req.context, req.continuation)
    if isinstance(req, GenerateRequest):
        return (-req.length(), req.params.to_dict().__repr__(), req.prompt or "", repr(req.messages))
    return (-req.length(), getattr(req, "text", None) or "", req.key())


# contexts that share at least this many leading characters (a few-shot block) stay together
SHARED_PREFIX_CHARS = 128


def order_requests(requests) -> list:
    """Longest first, except that loglikelihood requests whose contexts share a long prefix (the
    few-shot examples of a subject) stay next to each other, longest first among themselves, so
    the chunks a backend gets let it run each shared prefix once."""
    todo = sorted(requests, key=_sort_key)
    if len(todo) < 2 or not isinstance(todo[0], LoglikelihoodRequest):
        return todo
    contexts = [r.context for r in todo]
    units = [sorted(members) for members, _ in prefix_runs(contexts, [len(c) for c in contexts], SHARED_PREFIX_CHARS)]
    units.sort(key=lambda u: u[0])  # by the longest member's place in the length order
    return [todo[i] for u in units for i in u]


LOG_EVERY_S = float(os.environ.get("EVALKIT_PROGRESS_EVERY_S", 30))  # progress line period off a terminal (CI)
GIVE_UP_AFTER = 16        # unusable replies in a row, with none usable, end the run early


class Engine:
    def __init__(self, backend: Backend, cache, progress: bool = True):
        self.backend = backend
        self.cache = cache
        self.model_key = backend.identity_hash()
        self.progress = progress and sys.stderr.isatty() or progress == "always"
        # not a terminal (CI): a plain line every LOG_EVERY_S instead of a bar
        self.log_lines = bool(progress) and not self.progress
        self.stats = Counter()  # requested / unique / cached / computed, per kind and overall
        self.failures: list[tuple[str, str]] = []  # (kind, problem) of requests that got no usable answer

    def run(self, requests: Sequence) -> dict:
        """Answer every request; returns {request key: response}. Raises RequestsFailed (after every
        kind ran and every usable answer was committed) when some requests got no usable answer."""
        requests, groups = repeats_split.split(requests)  # n > 1: one request per sample, cached alone
        by_kind: dict[str, dict] = {}
        for r in requests:
            by_kind.setdefault(r.kind, {})[r.key()] = r
            self.stats["requested"] += 1
        answers = {}
        for kind in KIND_ORDER:
            unique = by_kind.get(kind)
            if not unique:
                continue
            self.stats["unique"] += len(unique)
            cached = self.cache.get_many(self.model_key, kind, unique.keys())
            answers.update(cached)
            self.stats["cached"] += len(cached)
            todo = order_requests(r for k, r in unique.items() if k not in cached)
            if todo:
                answers.update(self._compute(kind, todo))
            log.info("%s: %d unique requests, %d from cache, %d computed",
                     kind, len(unique), len(cached), len(todo))
        if self.failures:
            raise self._failed_error()
        return repeats_split.join(answers, groups)

    def _failed_error(self) -> RequestsFailed:
        n = len(self.failures)
        kinds = Counter(k for k, _ in self.failures)
        first = self.failures[0][1]
        what = ", ".join(f"{v} {k}" for k, v in kinds.items())
        return RequestsFailed(
            f"{n} request(s) got no usable answer from {self.backend.name} ({what}); first: {first}. "
            f"None of them was cached; the {self.stats['computed']} answered this run were. Fix the cause "
            f"and rerun: only the failed requests are computed again", failed=n, committed=self.stats["computed"])

    def _compute(self, kind: str, todo: list) -> dict:
        out, pending = {}, []
        size = max(1, int(self.backend.chunk_size))
        bar = tqdm(total=len(todo), desc=f"{self.backend.name} {kind}", unit="req",
                   disable=not self.progress, dynamic_ncols=True)
        last_commit = time.monotonic()
        done = usable = 0
        ticker = _Ticker(f"{self.backend.name} {kind}", len(todo), lambda: done) if self.log_lines else None

        def commit():
            nonlocal last_commit
            if pending:
                self.cache.put_many(self.model_key, kind, pending)
                self.stats["computed"] += len(pending)
                self.stats[f"computed_{kind}"] += len(pending)
                pending.clear()
            last_commit = time.monotonic()

        try:
            for i in range(0, len(todo), size):
                chunk = todo[i:i + size]
                seen = 0
                for group in self.backend.stream(kind, chunk):  # as they finish, where the backend can
                    seen += len(group)
                    for j, res in group:
                        req = chunk[j]
                        why = (res.problem if isinstance(res, RequestFailure)
                               else response_checks.problem(kind, req, res))
                        if why:
                            self.failures.append((kind, why))
                            self.stats["failed"] += 1
                        else:
                            pending.append((req.key(), res))
                            out[req.key()] = res
                            usable += 1
                        done += 1
                    bar.update(len(group))
                    now = time.monotonic()
                    if now - last_commit >= self.backend.commit_every_s:
                        commit()
                    if not usable and len(self.failures) >= GIVE_UP_AFTER:
                        raise self._failed_error()
                if seen != len(chunk):
                    raise RuntimeError(f"backend {self.backend.name} answered {seen} of {len(chunk)} {kind} requests")
                commit()
        finally:
            commit()  # whatever finished is kept, even when the backend failed or the run was interrupted
            bar.close()
            if ticker:
                ticker.stop()
        return out


class _Ticker:
    """A progress line on stderr every LOG_EVERY_S while work runs (CI logs have no bar), also while
    one long batch is still going."""

    def __init__(self, what: str, total: int, done):
        import threading
        self.what, self.total, self.done = what, total, done
        self.t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self):
        while not self._stop.wait(LOG_EVERY_S):
            n = self.done()
            print(f"evalkit: {self.what}: {n}/{self.total} requests ({100 * n / max(1, self.total):.0f}%), "
                  f"{time.monotonic() - self.t0:.0f}s", file=sys.stderr, flush=True)

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=5)
