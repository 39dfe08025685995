"""The retrieval step of a RAG task: which passages each question gets, through evalkit's own
retrievers (``evalkit.retrieval.pipeline``: BM25, dense bi-encoder embeddings as cached ``embed``
requests, hybrid fusion; optionally reranked by ``evalkit.retrieval.rerank``) or a saved TREC run
(``evalkit retrieve ... --save-run DIR``). Tasks call this; it never imports a task."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

RETRIEVAL_OPTIONS = ("retriever", "run", "depth", "embedder", "embed_backend", "embedding_cache", "rerank",
                     "rerank_top", "rerank_args")


@dataclass
class RagRetrieval:
    retriever: str = "bm25"                 # bm25, dense or hybrid (ignored with ``run``)
    run: Optional[str] = None               # a saved TREC/JSON run file instead of retrieving
    depth: int = 100
    embedder: str = "all-minilm-l6-v2"
    embed_backend: str = "hf"
    embedding_cache: Optional[str] = None   # default: evalkit's response cache
    rerank: Optional[str] = None            # hf:PATH / vllm:PATH
    rerank_top: int = 10
    rerank_args: dict = field(default_factory=dict)

    @classmethod
    def from_options(cls, options: dict) -> "RagRetrieval":
        kw = {k: options[k] for k in RETRIEVAL_OPTIONS if k in options and options[k] not in (None, "")}
        for k in ("depth", "rerank_top"):
            if k in kw:
                kw[k] = int(kw[k])
        if isinstance(kw.get("rerank_args"), str):
            from evalkit.util.kvargs import parse_model_args
            kw["rerank_args"] = parse_model_args(kw["rerank_args"].replace(";", ","), "rerank_args")
        out = cls(**{k: str(v) if k in ("retriever", "run", "embedder", "embed_backend") else v
                     for k, v in kw.items()})
        if out.retriever not in ("bm25", "dense", "hybrid"):
            raise ValueError(f"retriever={out.retriever!r}: expected bm25, dense or hybrid (or run=FILE)")
        return out

    def cache_path(self) -> str:
        if self.embedding_cache:
            return self.embedding_cache
        from evalkit.util.paths import default_cache_dir
        return str(default_cache_dir() / "responses.sqlite")


def retrieve_contexts(spec: RagRetrieval, corpus: dict, queries: dict, conv) -> tuple[dict, dict]:
    """({query: {doc: score}}, identity of the retrieval for the record)."""
    if spec.run:
        from evalkit.records.provenance import file_sha256
        from evalkit.retrieval.formats import read_trec_run
        run = read_trec_run(spec.run)
        unknown = sorted({d for docs in run.values() for d in docs if d not in corpus})
        if unknown:
            raise ValueError(f"{spec.run}: {len(unknown)} retrieved document id(s) are not in the corpus, "
                             f"e.g. {unknown[:3]}")
        identity = {"retriever": "saved run", "run": str(spec.run), "sha256": file_sha256(spec.run)}
    else:
        from evalkit.retrieval.pipeline import RetrieveConfig, run_retriever
        cfg = RetrieveConfig(task="rag", retrievers=(spec.retriever,), embedder=spec.embedder,
                             embed_backend=spec.embed_backend, depth=spec.depth, cache_path=spec.cache_path())
        run, identity = run_retriever(cfg, corpus, {q: t for q, t in queries.items()}, spec.retriever)
    if spec.rerank:
        from evalkit.retrieval.rerank import RerankSpec, rerank
        run, _, info = rerank(run, queries, corpus, RerankSpec(spec.rerank, spec.rerank_top,
                                                                args=dict(spec.rerank_args)), conv, spec.cache_path())
        identity = {**identity, "rerank": info}  # the task record's extra (not a model identity)
    return run, identity
