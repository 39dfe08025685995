"""Running retrievers on a retrieval task and recording them (``evalkit retrieve``).

``retrieve(cfg)`` loads the task's corpus and queries, runs each asked retriever once (BM25, dense,
hybrid; hybrid reuses the BM25 and dense runs of the same call, and embeddings are ``embed``
requests through the engine: deduped, cached by the embedder's identity, resumable), and writes one run record per retriever with the trec_eval-exact
measures, their CIs, the conventions and the retriever's full identity. ``--save-run`` keeps each
ranking as a TREC run file, which ``evalkit score --task retrieval --run`` scores alike.
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from evalkit.taskapi import registry
from evalkit.records import ModelInfo
from evalkit.retrieval import bm25 as bm25_mod
from evalkit.retrieval import fusion
from evalkit.retrieval.formats import write_trec_run
from evalkit.retrieval.scoring import Provenance, build_record

RETRIEVERS = ("bm25", "dense", "hybrid")


@dataclass
class RetrieveConfig:
    task: str
    data_path: Optional[str] = None
    task_options: dict = field(default_factory=dict)
    retrievers: tuple = ("bm25",)
    embedder: str = "all-minilm-l6-v2"
    embed_backend: str = "hf"                # hf (transformers mean pooling) or vllm
    fusion: str = "rrf"                      # rrf or weighted
    rrf_k: int = 60
    dense_weight: float = 0.5                # weighted fusion: dense share, BM25 gets the rest
    depth: int = 100                         # docs kept per query (and per retriever before fusion)
    limit: Optional[int] = None              # first N queries
    seed: int = 1234
    name: Optional[str] = None
    tags: list = field(default_factory=list)
    save_run_dir: Optional[str] = None
    cache_path: Optional[str] = None         # response cache for embed requests (SQLite); None: no cache
    batch_size: int = 32
    threads: Optional[int] = None
    index: str = "auto"                      # vector index: auto, numpy, flat, hnsw, ivf (vector_index.py)
    index_threshold: int = 1_000_000         # auto: faiss flat from this many vectors
    index_args: dict = field(default_factory=dict)  # hnsw m/ef_construction/ef_search; ivf nlist/nprobe/seed
    chunk: Optional[str] = None              # words|tokens|structure spec (chunking.py); docs scored by their best chunk
    rerank: Optional[str] = None             # hf:PATH / vllm:PATH: rerank each run's top ``rerank_top``
    rerank_top: int = 10
    rerank_template: str = "qwen3"
    rerank_instruction: Optional[str] = None
    rerank_doc_chars: int = 2000
    rerank_args: dict = field(default_factory=dict)

    def __post_init__(self):
        bad = [r for r in self.retrievers if r not in RETRIEVERS]
        if bad or not self.retrievers:
            raise ValueError(f"retriever {', '.join(bad) or '(none)'}: expected one or more of {', '.join(RETRIEVERS)}")
        if self.fusion not in ("rrf", "weighted"):
            raise ValueError(f"fusion {self.fusion!r}: expected rrf or weighted")
        if self.depth < 1 or (self.limit is not None and self.limit < 1):
            raise ValueError("--depth and --limit must be >= 1")
        from evalkit.retrieval.vector_index import IndexSpec
        IndexSpec(self.index, self.index_threshold, dict(self.index_args))  # a bad --index-args fails before any work
        if not 0.0 <= self.dense_weight <= 1.0:
            raise ValueError(f"--dense-weight {self.dense_weight}: expected a value in [0, 1]")
        if self.rerank:
            self.rerank_spec()  # checked before any model loads

    def rerank_spec(self):
        from evalkit.retrieval.rerank import DEFAULT_INSTRUCTION, RerankSpec
        return RerankSpec(self.rerank, self.rerank_top, self.rerank_template,
                          self.rerank_instruction or DEFAULT_INSTRUCTION, self.rerank_doc_chars, dict(self.rerank_args))


def _identity_hash(identity: dict) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:32]


class _Runs:
    """Each retriever's run, computed at most once per call."""

    def __init__(self, cfg: RetrieveConfig, corpus: dict, queries: dict):
        self.cfg, self.corpus, self.queries = cfg, corpus, queries
        self.documents = len(corpus)  # (the corpus may be cut into chunks below)
        self.runs, self.identities, self.timings, self.embed_stats = {}, {}, {}, {}
        self.owner, self.chunking, self.depth = None, None, cfg.depth
        if cfg.chunk:
            from evalkit.retrieval.chunking import ChunkSpec, chunk_corpus
            spec = ChunkSpec.parse(cfg.chunk, default_tokenizer=cfg.embedder)
            self.corpus, self.owner = chunk_corpus(corpus, spec)
            self.chunking = {**spec.to_dict(), "chunks": len(self.corpus)}
            per_doc = max(1, round(len(self.corpus) / max(1, len(corpus))))
            self.depth = cfg.depth * per_doc  # enough chunks to fill ``depth`` documents

    def doc_level(self, run: dict) -> dict:
        if self.owner is None:
            return run
        from evalkit.retrieval.chunking import docs_from_chunks
        return docs_from_chunks(run, self.owner, self.cfg.depth)

    def get(self, name: str) -> dict:
        if name not in self.runs:
            t0 = time.time()
            self.runs[name] = getattr(self, f"_{name}")()
            self.timings[name] = round(time.time() - t0, 3)
        return self.runs[name]

    def _bm25(self):
        self.identities["bm25"] = bm25_mod.bm25_params()
        return bm25_mod.bm25_run(list(self.corpus), list(self.corpus.values()), list(self.queries),
                                 list(self.queries.values()), self.depth)

    def _dense(self):
        from evalkit.backends.embedding import EmbeddingBackend
        from evalkit.run.cache import NullCache, ResponseCache
        from evalkit.retrieval.dense import make_embedder
        from evalkit.retrieval.vector_index import IndexSpec, search_run, split_info
        from evalkit.retrieval.embed_models import resolve_embedder
        cfg = self.cfg
        kw = {"threads": cfg.threads} if cfg.embed_backend in ("hf", "transformers") else {}
        backend = EmbeddingBackend(make_embedder(cfg.embed_backend, resolve_embedder(cfg.embedder), **kw),
                                   cfg.batch_size)
        cache = ResponseCache(cfg.cache_path) if cfg.cache_path else NullCache()
        stats: dict = {}
        try:
            t0 = time.time()
            docs = embed_texts(backend, cache, list(self.corpus.values()), stats)
            t1 = time.time()
            qv = embed_texts(backend, cache, list(self.queries.values()), stats)
            t2 = time.time()
        finally:
            cache.close()
            backend.close()
        spec = IndexSpec(cfg.index, cfg.index_threshold, dict(cfg.index_args), cfg.threads, cfg.seed)
        run, info = search_run(qv, docs, list(self.corpus), list(self.queries), self.depth, spec)
        info, measured = split_info(info)  # threshold, library, recall: stats, not identity
        self.embed_stats = {**stats, "corpus_embed_s": round(t1 - t0, 3), "query_embed_s": round(t2 - t1, 3),
                            "search_s": round(time.time() - t2, 3), "cache": str(cfg.cache_path or "none"),
                            **({"search_" + k: v for k, v in measured.items()}),
                            **({"kv_cache": backend.embedder.kv_cache} if hasattr(backend.embedder, "kv_cache") else {})}
        self.identities["dense"] = {"embedder": cfg.embedder, **backend.embedder.identity(),
                                    "search": {"similarity": "inner product", **info}}
        return run

    def _hybrid(self):
        runs = [self.get("bm25"), self.get("dense")]
        cfg = self.cfg
        if cfg.fusion == "rrf":
            fused = fusion.rrf(runs, cfg.rrf_k)
            how = {"fusion": "rrf", "k": cfg.rrf_k}
        else:
            fused = fusion.weighted(runs, [1 - cfg.dense_weight, cfg.dense_weight])
            how = {"fusion": "weighted", "weights": {"bm25": 1 - cfg.dense_weight, "dense": cfg.dense_weight},
                   "normalisation": "per-query min-max"}
        self.identities["hybrid"] = {**how, "bm25": self.identities["bm25"], "dense": self.identities["dense"]}
        return {q: dict(sorted(d.items(), key=lambda kv: -kv[1])[:self.depth]) for q, d in fused.items()}


def run_retriever(cfg: RetrieveConfig, corpus: dict, queries: dict, name: str) -> tuple[dict, dict]:
    """(run, identity) of one retriever over ``corpus`` for ``queries`` (the RAG task's retrieval step)."""
    runs = _Runs(cfg, corpus, queries)
    run = runs.doc_level(runs.get(name))
    return run, {"retriever": name, "depth": cfg.depth, **runs.identities[name],
                 **({"embeddings": runs.embed_stats} if runs.embed_stats else {})}


def embed_texts(backend, cache, texts: list, stats: dict):
    """Embeddings of ``texts`` (rows in order) as engine requests: deduped, cached, resumable."""
    import numpy as np
    from evalkit.run.engine import Engine
    from evalkit.taskapi.requests import EmbedRequest
    engine = Engine(backend, cache)
    reqs = [EmbedRequest(t) for t in texts]
    answers = engine.run(reqs)
    for k in ("requested", "unique", "cached", "computed"):
        stats[k] = stats.get(k, 0) + engine.stats.get(k, 0)
    return np.asarray([answers[r.key()] for r in reqs], dtype=np.float32)


def retrieve(cfg: RetrieveConfig, output_dir: Optional[str] = "results", reranker=None) -> list[dict]:
    """Run and record every asked retriever; returns one ``{"run", "samples"}`` per retriever (and one
    more per retriever, ``NAME+rerank``, with ``cfg.rerank``; ``reranker``: a reward backend already
    loaded for it, left open)."""
    t0 = time.time()
    task = registry.get_task_class(cfg.task)(data_path=cfg.data_path, **cfg.task_options)
    if not hasattr(task, "score_run"):
        raise ValueError(f"task {cfg.task} is not a retrieval task (see `evalkit tasks`)")
    data = task.data()
    docs = task.eval_docs()[:cfg.limit] if cfg.limit else task.eval_docs()
    queries = {d.id: d.query for d in docs}
    runs = _Runs(cfg, data.corpus, queries)
    t_load = round(time.time() - t0, 3)
    out, own_reranker = [], reranker is None
    try:
        for name in cfg.retrievers:
            run = runs.doc_level(runs.get(name))
            identity = {"retriever": name, "depth": cfg.depth, **runs.identities[name],
                        **({"chunking": runs.chunking} if runs.chunking else {})}
            stages = [_Stage(name, run, identity, {}, runs.timings.get(name, 0.0))]
            if cfg.rerank:
                if reranker is None:
                    from evalkit.backends.reward_catalog import make_reward_backend
                    reranker = make_reward_backend(cfg.rerank, cfg.rerank_args, flag="--rerank")
                from evalkit.retrieval.rerank import rerank
                reranked, _, info = rerank(run, queries, data.corpus, cfg.rerank_spec(), task.conv,
                                           cfg.cache_path, backend=reranker)
                stable = {k: v for k, v in info.items() if k not in ("pairs", "rerank_s", "cache", "inputs_cut_from_start")}
                stages.append(_Stage(f"{name}+rerank", reranked, {**identity, "rerank": stable}, {"rerank": info},
                                     runs.timings.get(name, 0.0) + info["rerank_s"]))
            for stage in stages:
                out.append(_record(cfg, task, docs, runs, name, stage, t_load, output_dir))
    finally:
        if reranker is not None and own_reranker:
            reranker.close()
    return out


@dataclass
class _Stage:
    """One ranking a retriever gives (and its reranked twin): its name, the run, its identity, what
    the record's extra adds and the seconds it took."""
    label_name: str
    run: dict
    identity: dict
    more: dict
    took: float


def _record(cfg, task, docs, runs, name: str, stage: _Stage, t_load: float, output_dir):
    label_name, run, identity, more = stage.label_name, stage.run, stage.identity, stage.more
    label = f"{cfg.name}+rerank" if cfg.name and label_name.endswith("+rerank") else (cfg.name or label_name)
    model = ModelInfo(spec=f"retriever:{label_name}", name=label, backend="retriever",
                      args={"retriever": label_name}, identity=identity, identity_hash=_identity_hash(identity))
    extra = {"retriever": identity, "corpus_size": runs.documents, "n_queries": len(runs.queries), **more}
    if name in ("dense", "hybrid") and runs.embed_stats:
        extra["embeddings"] = runs.embed_stats
    if cfg.save_run_dir:
        Path(cfg.save_run_dir).mkdir(parents=True, exist_ok=True)
        extra["trec_run"] = str(write_trec_run(Path(cfg.save_run_dir) / f"{cfg.task}.{label_name}.trec", run,
                                               label_name))
    source = Provenance(model, "evaluation", cfg.seed, cfg.data_path or "", label=label, tags=tuple(cfg.tags),
                        engine=more["rerank"]["pairs"] if "rerank" in more else None)  # the reranker's requests
    return build_record(task, docs, run, source, output_dir, extra=extra,
                        timings={"load_s": t_load, "retrieve_s": stage.took})
