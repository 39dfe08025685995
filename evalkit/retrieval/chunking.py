"""Chunking a corpus for retrieval, and scoring documents from their chunks.

- ``words:SIZE[:OVERLAP]``: windows of SIZE whitespace-separated words, each starting SIZE - OVERLAP
  words after the previous (the last may be shorter; a short document is one chunk); a chunk is its
  words joined by single spaces.
- ``tokens:SIZE[:OVERLAP[:TOKENIZER]]``: windows of SIZE tokens of TOKENIZER (a bundled embedder name
  or a local tokenizer folder; default: the run's embedder, so a chunk fits its ``max_seq_length``),
  counted without special tokens; a chunk is the original text from its first token's first
  character to its last token's last character (the tokenizer's offsets), so BM25 and the embedder
  index the same text.
- ``structure:SIZE[:MODE]``: paragraphs, markdown sections or top-level code blocks
  (``evalkit.retrieval.chunk_structure``; MODE auto, paragraphs, markdown or code) merged up to SIZE
  words, oversized ones split; each chunk a span of the original text.

Chunk ids are ``<doc id>#<n>``. A document's score is its best chunk's (MaxP), so the measures stay
document-level: a hit is the judged document, found through any of its chunks. The spec enters the
record (``extra.retriever.chunking``); the embedding cache sees only each chunk's text.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

UNITS = ("words", "tokens", "structure")
USAGE = "expected words:SIZE[:OVERLAP], tokens:SIZE[:OVERLAP[:TOKENIZER]] or structure:SIZE[:MODE], e.g. tokens:128:32"


@dataclass(frozen=True)
class ChunkSpec:
    size: int
    overlap: int = 0
    unit: str = "words"
    tokenizer: Optional[str] = None   # tokens: a bundled embedder name or a tokenizer folder
    mode: str = "auto"                # structure: auto, paragraphs, markdown, code

    def __post_init__(self):
        if self.unit not in UNITS:
            raise ValueError(f"chunking unit {self.unit!r}: {USAGE}")
        if self.size < 1 or not 0 <= self.overlap < self.size:
            raise ValueError(f"chunking {self.unit}:{self.size}:{self.overlap}: need size >= 1 and 0 <= overlap < size")
        if self.unit == "structure" and self.overlap:
            raise ValueError("chunking structure: pieces do not overlap (structure:SIZE[:MODE])")
        if self.unit == "structure":
            from evalkit.retrieval.chunk_structure import MODES
            if self.mode not in MODES:
                raise ValueError(f"chunking structure:{self.size}:{self.mode}: mode must be one of {', '.join(MODES)}")

    @classmethod
    def parse(cls, text: str, default_tokenizer: Optional[str] = None) -> "ChunkSpec":
        parts = text.split(":")
        unit = parts[0]
        limits = {"words": 3, "tokens": None, "structure": 3}
        if unit not in UNITS or len(parts) < 2 or (limits[unit] and len(parts) > limits[unit]):
            raise ValueError(f"--chunk {text!r}: {USAGE}")
        try:
            if unit == "structure":
                return cls(int(parts[1]), unit=unit, mode=parts[2] if len(parts) == 3 else "auto")
            overlap = int(parts[2]) if len(parts) >= 3 else 0
            if unit == "tokens":
                # a tokenizer folder may itself hold ':' (rare): everything after the overlap is its name
                tok = ":".join(parts[3:]) or default_tokenizer
                if not tok:
                    raise ValueError("tokens chunking needs a tokenizer (tokens:SIZE:OVERLAP:TOKENIZER)")
                return cls(int(parts[1]), overlap, unit, tokenizer=tok)
            return cls(int(parts[1]), overlap)
        except ValueError as e:
            raise ValueError(f"--chunk {text!r}: {e}") from None

    def to_dict(self) -> dict:
        d = {"unit": self.unit, "size": self.size, "overlap": self.overlap, "doc_score": "max over chunks"}
        if self.unit == "tokens":
            d["tokenizer"] = tokenizer_identity(self.tokenizer)
            d["special_tokens"] = "not counted"
        if self.unit == "structure":
            d.update(mode=self.mode, size_unit="words", oversized="split at blank lines, then lines, then words")
        return d


_TOKENIZERS: dict = {}


def _tokenizer_dir(name: str):
    from pathlib import Path
    from evalkit.retrieval.embed_models import BUNDLED_EMBEDDERS, resolve_embedder
    if name in BUNDLED_EMBEDDERS:
        return resolve_embedder(name)
    p = Path(name).expanduser()
    if not p.is_dir():
        raise ValueError(f"chunking tokenizer {name!r}: not a local tokenizer folder nor one of "
                         f"{', '.join(BUNDLED_EMBEDDERS)} (hub downloads are not attempted)")
    return p


def load_tokenizer(name: str):
    if name not in _TOKENIZERS:
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained(str(_tokenizer_dir(name)))
        if not tok.is_fast:
            raise ValueError(f"chunking tokenizer {name!r}: a fast tokenizer (tokenizer.json) is needed for character offsets")
        _TOKENIZERS[name] = tok
    return _TOKENIZERS[name]


def tokenizer_identity(name: str) -> dict:
    from evalkit.records.provenance import file_sha256
    folder = _tokenizer_dir(name)
    files = {f: file_sha256(folder / f)[:16] for f in ("tokenizer.json", "tokenizer_config.json") if (folder / f).is_file()}
    return {"name": name, "files": files}


def _windows(n: int, size: int, overlap: int) -> list[tuple[int, int]]:
    if n <= size:
        return [(0, n)]
    out, step = [], size - overlap
    for start in range(0, n, step):
        out.append((start, min(start + size, n)))
        if start + size >= n:
            break
    return out


def token_spans(text: str, spec: ChunkSpec) -> list[tuple[int, int]]:
    offsets = load_tokenizer(spec.tokenizer)(text, add_special_tokens=False, return_offsets_mapping=True,
                                             verbose=False)["offset_mapping"]
    offsets = [o for o in offsets if o[1] > o[0]]
    if not offsets:
        return [(0, len(text))]
    return [(offsets[a][0], offsets[b - 1][1]) for a, b in _windows(len(offsets), spec.size, spec.overlap)]


def chunk_text(text: str, spec: ChunkSpec) -> list[str]:
    if spec.unit == "words":
        words = text.split()
        return [" ".join(words[a:b]) for a, b in _windows(len(words), spec.size, spec.overlap)]
    if spec.unit == "tokens":
        spans = token_spans(text, spec)
    else:
        from evalkit.retrieval.chunk_structure import structure_spans
        spans = structure_spans(text, spec.size, spec.mode)[0] or [(0, len(text))]
    return [text[a:b] for a, b in spans]


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
