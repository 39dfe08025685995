"""An embedding model as a backend: answers ``embed`` requests (one vector per text) through the
engine, so embeddings are deduped, cached by the embedder's identity and resumable like any other
answer. The embedder itself is ``evalkit.retrieval.dense`` (transformers mean pooling or vLLM)."""
from __future__ import annotations

from collections import Counter
from typing import Sequence

from evalkit.backends.base import Backend


class EmbeddingBackend(Backend):
    name = "embedding"

    def __init__(self, embedder, chunk_size: int = 32):
        self.embedder = embedder
        self.chunk_size = chunk_size
        self.stats = Counter()

    def identity(self) -> dict:
        return {"kind": "embedding", **self.embedder.identity(), "model": self.embedder.model_dir.name}

    def embed(self, requests: Sequence) -> list[list[float]]:
        vecs = self.embedder([r.text for r in requests])
        self.stats["texts_embedded"] += len(requests)
        return [v.tolist() for v in vecs]

    def loglikelihood(self, requests):
        raise ValueError(f"{self.display_name} is an embedding model: it answers embed requests only")

    def generate(self, requests):
        raise ValueError(f"{self.display_name} is an embedding model: it answers embed requests only")

    def close(self) -> None:
        self.embedder.close()
