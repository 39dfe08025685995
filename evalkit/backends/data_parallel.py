"""Data parallelism over independent engine actors with Ray.

``--model-args data_parallel_size=N`` (optionally ``ray_address=auto`` to join a cluster) starts N
actors, each holding its own backend (HF or vLLM, with tensor parallelism inside an actor where the
backend has it). The engine still dedupes and caches; this wrapper cuts each
chunk into N length-balanced shards (requests arrive sorted longest first and are dealt round-robin,
with loglikelihood requests sharing a context kept together so one forward pass still scores all
choices), runs them side by side, each shard as a queue of small pieces whose answers stream back to the
engine (and into the cache) as each piece finishes, so a kill loses only the pieces in flight. Its identity is the inner
backend's, so the cache and the run record are exactly those of a single-engine run.

Actors are independent (no collective ops that can hang, unlike lm-eval's accelerate/Ray data
parallel): when one dies its shard is retried on another live actor, and a dead actor is replaced.
"""
from __future__ import annotations

import logging
from typing import Optional, Sequence

from evalkit.backends.base import Backend
from evalkit.taskapi.requests import LoglikelihoodRequest

log = logging.getLogger(__name__)


class _EngineActor:
    """Runs inside a Ray worker process: one backend instance, created once."""

    def __init__(self, prefix: str, model: str, model_args: dict):
        from evalkit.backends.catalog import backend_class
        self.backend = backend_class(prefix)(model, **model_args)

    def identity(self) -> dict:
        return self.backend.identity()

    def info(self) -> dict:
        return {"name": self.backend.display_name, "chunk_size": self.backend.chunk_size,
                "identity_hash": self.backend.identity_hash()}

    def call(self, method: str, requests: list):
        return getattr(self.backend, method)(requests)

    def apply_chat_template(self, messages):
        return self.backend.apply_chat_template(messages)


def deal_shards(requests: Sequence, n: int) -> list[list[int]]:
    """Indices of each shard: groups (a shared loglikelihood context, else one request) dealt
    round-robin in arrival order, so shards get similar lengths and choices stay together."""
    groups: dict = {}
    for i, r in enumerate(requests):
        key = ("ctx", r.context) if isinstance(r, LoglikelihoodRequest) else ("req", i)
        groups.setdefault(key, []).append(i)
    shards: list[list[int]] = [[] for _ in range(n)]
    for g, idxs in enumerate(groups.values()):
        shards[g % n].extend(idxs)
    return shards


class DataParallelBackend(Backend):
    name = "dp"

    def __init__(self, prefix: str, model: str, model_args: dict, size: int, ray_address: Optional[str] = None,
                 cpus_per_engine: Optional[float] = None, gpus_per_engine: Optional[float] = None,
                 max_retries: int = 2, piece_size: int = 16):
        import ray

        if not ray.is_initialized():
            ray.init(address=ray_address, ignore_reinit_error=True, include_dashboard=False,
                     log_to_driver=False, logging_level=logging.WARNING)
        if gpus_per_engine is None:
            gpus_per_engine = float(model_args.get("tensor_parallel_size", 1)) if ray.cluster_resources().get("GPU") else 0
        self._ray = ray
        self._actor_cls = ray.remote(num_cpus=cpus_per_engine if cpus_per_engine is not None else 1,
                                     num_gpus=gpus_per_engine)(_EngineActor)
        self._spec = (prefix, model, dict(model_args))
        self.size = int(size)
        self.max_retries = int(max_retries)
        self.piece_size = max(1, int(piece_size))
        self.actors = [self._new_actor() for _ in range(self.size)]
        infos = ray.get([a.info.remote() for a in self.actors])
        if len({i["identity_hash"] for i in infos}) != 1:
            raise RuntimeError("data-parallel engines disagree on the model identity (different files on nodes?)")
        self._identity = ray.get(self.actors[0].identity.remote())
        self.name = prefix
        self._display = infos[0]["name"]
        self.chunk_size = infos[0]["chunk_size"] * self.size
        self.restarts = 0

    def _new_actor(self):
        prefix, model, args = self._spec
        return self._actor_cls.remote(prefix, model, args)

    def identity(self) -> dict:
        return self._identity

    @property
    def display_name(self) -> str:
        return self._display

    def _pieces(self, requests: list) -> list[tuple[int, list[int]]]:
        """(shard, indices) pieces: each actor's shard cut into pieces of about ``piece_size`` requests
        (a shared loglikelihood context never split), queued on the actor one after another, so
        answers come back, and are committed, piece by piece rather than once per chunk."""
        out = []
        for k, idxs in enumerate(deal_shards(requests, self.size)):
            piece: list[int] = []
            for i in idxs:
                r = requests[i]
                if (len(piece) >= self.piece_size and not (
                        isinstance(r, LoglikelihoodRequest) and r.context == requests[piece[-1]].context)):
                    out.append((k, piece))
                    piece = []
                piece.append(i)
            if piece:
                out.append((k, piece))
        return out

    def _finished(self, method: str, requests: Sequence):
        """Yields (indices, answers) per piece as it finishes (``ray.wait``); a piece whose actor died
        is retried on the next actor, and the dead actor replaced once (the pieces queued on it fail
        too, and find it replaced already)."""
        from ray.exceptions import RayActorError, RayTaskError

        requests = list(requests)
        attempts: dict[int, int] = {}
        futures: dict = {}

        def submit(p: int, k: int, idxs: list[int]) -> None:
            actor_no = (k + attempts.get(p, 0)) % self.size
            actor = self.actors[actor_no]
            futures[actor.call.remote(method, [requests[i] for i in idxs])] = (p, k, idxs, actor_no, actor)

        for p, (k, idxs) in enumerate(self._pieces(requests)):
            submit(p, k, idxs)
        while futures:
            (ready,), _ = self._ray.wait(list(futures), num_returns=1)
            p, k, idxs, actor_no, actor = futures.pop(ready)
            try:
                out = self._ray.get(ready)
            except (RayActorError, RayTaskError) as e:
                if isinstance(e, RayTaskError) and not isinstance(e.cause, (RayActorError, OSError, MemoryError)):
                    raise  # a bug or bad input in the backend: retrying elsewhere will not help
                attempts[p] = attempts.get(p, 0) + 1
                if attempts[p] > self.max_retries:
                    raise RuntimeError(f"shard {k} failed {attempts[p]} times; last error: {e}") from e
                if self.actors[actor_no] is actor:  # not replaced yet by an earlier piece's failure
                    log.warning("engine actor %d failed (%s); replacing it and retrying its work", actor_no, e)
                    try:
                        self._ray.kill(actor)
                    except Exception:  # noqa: BLE001 -- already gone
                        pass
                    self.actors[actor_no] = self._new_actor()
                    self.restarts += 1
                submit(p, k, idxs)
                continue
            yield idxs, out

    def _run(self, method: str, requests: Sequence) -> list:
        results: list = [None] * len(requests)
        for idxs, out in self._finished(method, requests):
            for i, res in zip(idxs, out):
                results[i] = res
        return results

    def stream(self, kind: str, requests: Sequence):
        """Answers piece by piece as the actors finish them, so the engine commits them at once."""
        for idxs, out in self._finished(kind, requests):
            if len(out) != len(idxs):
                raise RuntimeError(f"an engine actor returned {len(out)} responses for {len(idxs)} {kind} requests")
            yield list(zip(idxs, out))

    def loglikelihood(self, requests):
        return self._run("loglikelihood", requests)

    def loglikelihood_rolling(self, requests):
        return self._run("loglikelihood_rolling", requests)

    def generate(self, requests):
        return self._run("generate", requests)

    def tool_chat(self, requests):  # agent turns, rendered and parsed by each actor's backend
        return self._run("tool_chat", requests)

    def apply_chat_template(self, messages):
        return self._ray.get(self.actors[0].apply_chat_template.remote(messages))

    def close(self) -> None:
        for a in self.actors:
            try:
                self._ray.kill(a)
            except Exception:
                pass
