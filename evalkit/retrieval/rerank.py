"""Reranking the top-K of a first-stage run (BM25, dense, hybrid) with a cross-encoder or an LLM.

Each (query, document) pair of the first ``top`` documents becomes one ``reward`` request: the pair
rendered under a reranking template as raw text (``RewardRequest(text=...)``), scored by a
sequence-classification model through the reward backends (``hf:PATH``: transformers
``AutoModelForSequenceClassification``, the reference; ``vllm:PATH``: vLLM ``LLM(runner="pooling")``
classify). So scores go through the engine like any answer: deduped, cached by the model's
identity (weights, activation, dtype) and the rendered text, resumable; changing ``top`` or a
metric never re-scores a pair already scored. Scores are raw (no sigmoid) unless
``activation=sigmoid`` is asked for.

Templates:

* ``qwen3`` (default): the Qwen3-Reranker prompt: a system turn asking for "yes" or "no", the
  instruction, query and document in the user turn, an empty think block in the assistant turn.
  The model's score at the last token is the reranker score; for a Qwen3-Reranker converted to a
  one-label classifier (and for evalkit's reward fixture) that is logit("yes") - logit("no").
* ``plain``: ``{query}\\n{document}`` for decoder cross-encoders trained on the bare pair.
* any other value containing ``{query}`` and ``{document}`` (and optionally ``{instruction}``): a
  template of your own.

The reranked order: the first ``top`` documents of the first stage sorted by reranker score
(ties keep their first-stage order), then every other document in its first-stage order. The
run's scores are rank-based (n - rank), so this order survives any tie policy of the measures.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Optional

QWEN3_SYSTEM = ('Judge whether the Document meets the requirements based on the Query and the Instruct provided. '
                'Note that the answer can only be "yes" or "no".')
QWEN3_TEMPLATE = ("<|im_start|>system\n" + QWEN3_SYSTEM + "<|im_end|>\n<|im_start|>user\n"
                  "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {document}<|im_end|>\n"
                  "<|im_start|>assistant\n<think>\n\n</think>\n\n")
TEMPLATES = {"qwen3": QWEN3_TEMPLATE, "plain": "{query}\n{document}"}
DEFAULT_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"


@dataclass(frozen=True)
class RerankSpec:
    model: str                              # hf:PATH or vllm:PATH (a sequence-classification model)
    top: int = 10                           # rerank the first ``top`` documents of each query
    template: str = "qwen3"                 # a name in TEMPLATES or a template with {query} and {document}
    instruction: str = DEFAULT_INSTRUCTION
    doc_chars: int = 2000                   # each document is cut to this many characters (0: never)
    args: dict = field(default_factory=dict)  # backend options (dtype, batch_size, activation, ...)

    def __post_init__(self):
        from evalkit.backends.reward_catalog import split_reward_spec
        split_reward_spec(self.model, "--rerank")
        if int(self.top) < 1:
            raise ValueError(f"--rerank-top {self.top}: expected a number of documents >= 1")
        text = self.template_text()
        if "{query}" not in text or "{document}" not in text:
            raise ValueError(f"--rerank-template {self.template!r}: expected one of {', '.join(TEMPLATES)} or a "
                             "template containing {query} and {document}")

    def template_text(self) -> str:
        return TEMPLATES.get(self.template, self.template)

    def render(self, query: str, document: str) -> str:
        doc = document[:self.doc_chars] if self.doc_chars else document
        return (self.template_text().replace("{instruction}", self.instruction)
                .replace("{query}", query).replace("{document}", doc))

    def to_dict(self) -> dict:
        text = self.template_text()
        return {"model": self.model, "top": int(self.top), "template": self.template if self.template in TEMPLATES
                else "custom", "template_sha256": hashlib.sha256(text.encode()).hexdigest()[:16],
                "instruction": self.instruction if "{instruction}" in text else None,
                "doc_chars": self.doc_chars, "args": dict(self.args)}


def first_stage_order(run: dict, conv) -> dict[str, list[str]]:
    """Each query's documents in first-stage rank order, ties broken by the measures' convention."""
    from evalkit.retrieval.measures import ranked_list
    return {q: ranked_list(run, q, conv) for q in run}


def pair_requests(order: dict, queries: dict, corpus: dict, spec: RerankSpec) -> dict[str, list]:
    """{query: [(doc id, RewardRequest), ...]} for the first ``top`` documents of each query."""
    from evalkit.taskapi.requests import RewardRequest
    out = {}
    for q, docs in order.items():
        out[q] = [(d, RewardRequest(text=spec.render(queries[q], corpus[d]))) for d in docs[:spec.top]
                  if d in corpus]
    return out


def reorder(order: dict, scores: dict, top: int) -> dict[str, dict[str, float]]:
    """The reranked run: ``scores`` ({query: {doc: reranker score}}) sorts each query's first ``top``
    documents (stable: ties keep their first-stage order), the rest follow in first-stage order;
    run scores are n - rank."""
    out = {}
    for q, docs in order.items():
        head, tail = docs[:top], docs[top:]
        s = scores.get(q, {})
        head = sorted(head, key=lambda d: -s.get(d, float("-inf")))
        ranked = head + tail
        out[q] = {d: float(len(ranked) - i) for i, d in enumerate(ranked)}
    return out


def score_pairs(backend, cache, pairs: dict, stats: dict) -> dict[str, dict[str, float]]:
    """Reranker scores of every pair through the engine (deduped, cached, resumable)."""
    from evalkit.run.engine import Engine
    engine = Engine(backend, cache)
    answers = engine.run([r for reqs in pairs.values() for _, r in reqs])
    for k in ("requested", "unique", "cached", "computed"):
        stats[k] = stats.get(k, 0) + engine.stats.get(k, 0)
    return {q: {d: float(answers[r.key()]) for d, r in reqs} for q, reqs in pairs.items()}


def rerank(run: dict, queries: dict, corpus: dict, spec: RerankSpec, conv, cache_path: Optional[str] = None,
           backend=None) -> tuple[dict, dict, dict]:
    """(reranked run, reranker scores {query: {doc: score}}, info for the record)."""
    import time
    from evalkit.backends.reward_catalog import make_reward_backend
    from evalkit.run.cache import NullCache, ResponseCache
    t0 = time.time()
    order = first_stage_order(run, conv)
    pairs = pair_requests(order, queries, corpus, spec)
    own = backend is None
    backend = backend or make_reward_backend(spec.model, spec.args, flag="--rerank")
    cache = ResponseCache(cache_path) if cache_path else NullCache()
    stats: dict = {}
    try:
        scores = score_pairs(backend, cache, pairs, stats)
        identity = {**backend.identity(), "api": backend.api}
        cut = int(backend.stats.get("reward_inputs_cut", 0))
    finally:
        cache.close()
        if own:
            backend.close()
    info = {**spec.to_dict(), "identity": identity, "pairs": stats, "inputs_cut_from_start": cut,
            "order": "top-K by reranker score (ties: first-stage order), then the rest in first-stage order; "
                     "run scores are n - rank", "rerank_s": round(time.time() - t0, 3),
            "cache": str(cache_path or "none")}
    return reorder(order, scores, spec.top), scores, info
