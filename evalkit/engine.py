"""The request engine: one big batch per request kind for all tasks of a run.

It dedupes identical requests across tasks, answers what the persistent cache already has, sorts
the rest by length (longest first, so memory trouble shows at once and padding stays small; requests
that share a long few-shot prefix are kept together so a backend can run that prefix once), hands
them to the backend in chunks and commits each chunk's responses to the cache before the next one:
a run killed at any point and started again recomputes nothing it had finished.
"""
from __future__ import annotations

import logging
import sys
from collections import Counter
from typing import Sequence

from tqdm.auto import tqdm

from evalkit.backends.base import Backend
from evalkit.backends.shared_prefix import prefix_runs
from evalkit.requests import GenerateRequest, LoglikelihoodRequest

log = logging.getLogger(__name__)

KIND_ORDER = ("loglikelihood", "loglikelihood_rolling", "generate")


def _sort_key(req):
    # Longest first; loglikelihood requests sharing a context stay adjacent so a backend can score
    # all single-token choices of a question from one forward pass.
    if isinstance(req, LoglikelihoodRequest):
        return (-len(req.context) - len(req.continuation), req.context, req.continuation)
    if isinstance(req, GenerateRequest):
        return (-req.length(), req.params.to_dict().__repr__(), req.prompt or "", repr(req.messages))
    return (-req.length(), req.text)


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


class Engine:
    def __init__(self, backend: Backend, cache, progress: bool = True):
        self.backend = backend
        self.cache = cache
        self.model_key = backend.identity_hash()
        self.progress = progress and sys.stderr.isatty() or progress == "always"
        self.stats = Counter()  # requested / unique / cached / computed, per kind and overall

    def run(self, requests: Sequence) -> dict:
        """Answer every request; returns {request key: response}."""
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
        return answers

    def _compute(self, kind: str, todo: list) -> dict:
        call = {"loglikelihood": self.backend.loglikelihood,
                "loglikelihood_rolling": self.backend.loglikelihood_rolling,
                "generate": self.backend.generate}[kind]
        out = {}
        size = max(1, int(self.backend.chunk_size))
        bar = tqdm(total=len(todo), desc=f"{self.backend.name} {kind}", unit="req",
                   disable=not self.progress, dynamic_ncols=True)
        try:
            for i in range(0, len(todo), size):
                chunk = todo[i:i + size]
                results = call(chunk)
                if len(results) != len(chunk):
                    raise RuntimeError(f"backend {self.backend.name} returned {len(results)} "
                                       f"responses for {len(chunk)} {kind} requests")
                pairs = [(r.key(), res) for r, res in zip(chunk, results)]
                self.cache.put_many(self.model_key, kind, pairs)
                out.update(pairs)
                self.stats["computed"] += len(chunk)
                self.stats[f"computed_{kind}"] += len(chunk)
                bar.update(len(chunk))
        finally:
            bar.close()
        return out
