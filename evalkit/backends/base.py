"""The backend protocol: one class per way of running a model.

A backend answers lists of requests of one kind. The engine has already deduped them, removed
cached ones, sorted them by length and cut them into chunks; a backend batches inside a chunk as it
sees fit. ``identity()`` describes the model exactly (weights, tokenizer, chat template, dtype):
its digest keys the cache, so it must never hold secrets.
"""
from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from typing import Sequence

from evalkit.requests import Completion, GenerateRequest, LoglikelihoodRequest, LoglikelihoodResult, RollingRequest


class Backend(ABC):
    name: str = "base"
    #: how many requests the engine hands over per call (and commits to the cache after)
    chunk_size: int = 64

    @abstractmethod
    def identity(self) -> dict: ...

    def identity_hash(self) -> str:
        blob = json.dumps(self.identity(), sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:32]

    @property
    def display_name(self) -> str:
        return str(self.identity().get("model", self.name))

    @abstractmethod
    def loglikelihood(self, requests: Sequence[LoglikelihoodRequest]) -> list[LoglikelihoodResult]: ...

    @abstractmethod
    def loglikelihood_rolling(self, requests: Sequence[RollingRequest]) -> list[float]: ...

    @abstractmethod
    def generate(self, requests: Sequence[GenerateRequest]) -> list[list[Completion]]: ...

    def apply_chat_template(self, messages: list[dict]) -> str:
        """Render chat messages into the model's prompt string (generation prompt appended)."""
        raise NotImplementedError(f"backend {self.name} cannot render chat templates")

    def close(self) -> None:
        pass
