"""Chunking a corpus for retrieval, and scoring documents from their chunks.

``words:SIZE:OVERLAP`` cuts each document into windows of SIZE whitespace tokens, each starting
SIZE - OVERLAP tokens after the previous (the last window may be shorter; a short document is one
chunk). Chunk ids are ``<doc id>#<n>``. A document's score is its best chunk's (MaxP), so the
measures stay document-level: a hit is the judged document, found through any of its chunks.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ChunkSpec:
    size: int
    overlap: int = 0

    def __post_init__(self):
        if self.size < 1 or not 0 <= self.overlap < self.size:
            raise ValueError(f"chunking words:{self.size}:{self.overlap}: need size >= 1 and 0 <= overlap < size")

    @classmethod
    def parse(cls, text: str) -> "ChunkSpec":
        parts = text.split(":")
        if parts[0] != "words" or len(parts) not in (2, 3):
            raise ValueError(f"--chunk {text!r}: expected words:SIZE[:OVERLAP], e.g. words:200:50")
        try:
            return cls(int(parts[1]), int(parts[2]) if len(parts) == 3 else 0)
        except ValueError as e:
            raise ValueError(f"--chunk {text!r}: {e}") from None

    def to_dict(self) -> dict:
        return {"unit": "words", "size": self.size, "overlap": self.overlap, "doc_score": "max over chunks"}


def chunk_text(text: str, spec: ChunkSpec) -> list[str]:
    words = text.split()
    if len(words) <= spec.size:
        return [" ".join(words)]
    step = spec.size - spec.overlap
    out = []
    for start in range(0, len(words), step):
        out.append(" ".join(words[start:start + spec.size]))
        if start + spec.size >= len(words):
            break
    return out


def chunk_corpus(corpus: dict, spec: ChunkSpec) -> tuple[dict, dict]:
    """({chunk id: text}, {chunk id: doc id})."""
    chunks, owner = {}, {}
    for doc_id, text in corpus.items():
        for n, piece in enumerate(chunk_text(text, spec)):
            cid = f"{doc_id}#{n}"
            chunks[cid], owner[cid] = piece, doc_id
    return chunks, owner


def docs_from_chunks(run: dict, owner: dict, depth: int) -> dict:
    """Chunk scores -> document scores (max over a document's chunks), top ``depth`` per query."""
    out = {}
    for q, scores in run.items():
        best: dict = {}
        for cid, s in scores.items():
            d = owner[cid]
            if d not in best or s > best[d]:
                best[d] = s
        out[q] = dict(sorted(best.items(), key=lambda kv: -kv[1])[:depth])
    return out
