"""End-to-end RAG: retrieve, put the top-k passages into the prompt, generate, score the answer.

Every question makes two generate requests: the RAG prompt (the top ``k`` passages, then the
question) and, for reference, the closed-book prompt (the question alone, k=0). Per sample:
``answer_accuracy`` (the RAG answer under the task's own verifier), ``closed_book_accuracy``,
and the retrieval step's ``hit@k``, ``recall@k`` and ``mrr@k`` over the passages the prompt
showed (trec_eval conventions), each with its CI; the breakdowns ``gold_retrieved`` and
``gold_missed`` split both accuracies by whether a relevant document was among the k passages.

- ``rag``: a BEIR-format folder (``--data rag=DIR``: corpus.jsonl, queries.jsonl, qrels/test.tsv)
  whose queries carry an ``answers`` field (a string or a list); answers are scored by SQuAD-style
  normalised match (lower case, no punctuation or articles): ``exact_match`` and
  ``contains_match`` (a gold answer inside the generation), ``answer_accuracy`` = the one named
  by ``match=contains|exact`` (default contains).
- ``rag_gsm8k``: GSM8K test questions against a corpus of the GSM8K test set's worked solutions;
  a question's own solution is its one relevant document. Both prompts end in "Answer: ####", so
  the model writes the final number (16 tokens, one line) and the GSM8K verifier reads "#### N"
  (``answer_accuracy`` = numeric exact match; strict and flexible exact match too). With the gold
  solution among the passages even SmolLM2-135M can copy the number; closed-book it rarely can.

Options (``--task-args TASK:...``): ``k=3`` (passages in the prompt), ``retriever=bm25|dense|hybrid``
(evalkit's retrievers; dense embeddings are cached ``embed`` requests), ``embedder=``,
``embed_backend=hf|vllm``, ``run=FILE`` (a saved TREC run from ``evalkit retrieve --save-run``,
e.g. a reranked one), ``rerank=hf:PATH|vllm:PATH`` and ``rerank_top=``, ``closed_book=true``,
``doc_chars=1500`` (each passage cut to this many characters), ``order=best_last|best_first``
(passage order in the prompt; default the best passage next to the question), ``limit_corpus=N``,
``split=test``.
"""
from __future__ import annotations

import re
import string
from typing import Optional

from evalkit.taskapi.data import DataError, jsonl_records, require
from evalkit.taskapi.items import Doc, Scored
from evalkit.taskapi.requests import GenerateRequest, GenParams
from evalkit.retrieval.conventions import Conventions
from evalkit.retrieval.measures import query_measures, ranked_list
from evalkit.retrieval.rag_context import RETRIEVAL_OPTIONS, RagRetrieval, retrieve_contexts
from evalkit.scoring.metric import Metric
from evalkit.scoring.stats import mean_metric
from evalkit.taskapi.task import GenerationTask, register_task
from evalkit.tasks.gsm8k import GSM8K, GSM8K_DATA


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in str(text).lower() if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


class _RagBase(GenerationTask):
    family = "rag"
    version = "1"
    num_fewshot = 0
    gen_params = GenParams(max_tokens=32, temperature=0.0, stop=("\n", "<|im_end|>", "</s>"))
    passages_header = "Passages:"
    own_options: tuple = ("k", "closed_book", "doc_chars", "limit_corpus", "split", "order")
    #: what ``answer_metrics`` gives besides ``answer_accuracy`` (declared with the retrieval measures)
    answer_metric_names: tuple = ()
    known_options: tuple = own_options + RETRIEVAL_OPTIONS  # what --task-args may name (checked up front)

    def __init__(self, data_path: Optional[str] = None, **options):
        super().__init__(data_path, **options)
        unknown = sorted(set(options) - set(self.own_options) - set(RETRIEVAL_OPTIONS))
        if unknown:
            raise ValueError(f"task {self.name}: unknown option(s) {', '.join(unknown)} (known: "
                             f"{', '.join(sorted(set(self.own_options) | set(RETRIEVAL_OPTIONS)))})")
        self.k = int(options.get("k", 3))
        if self.k < 1:
            raise ValueError(f"task {self.name}: k={self.k}: expected passages >= 1 (the closed-book answer is "
                             "always reported beside)")
        self.closed_book = str(options.get("closed_book", True)).lower() not in ("false", "0", "no")
        self.doc_chars = int(options.get("doc_chars", 1500))
        self.order = str(options.get("order", "best_last"))
        if self.order not in ("best_last", "best_first"):
            raise ValueError(f"task {self.name}: order={self.order!r}: expected best_last (the best passage next "
                             "to the question, the default) or best_first")
        self.retrieval = RagRetrieval.from_options({"depth": max(self.k, 10), **options})
        # the closed-book answer is there when the run asked the question without passages too
        self.metrics = (Metric("answer_accuracy"),
                        *((Metric("closed_book_accuracy", required=False),) if self.closed_book else ()),
                        *(Metric(f"{m}@{self.k}") for m in ("hit", "recall", "mrr")),
                        *(Metric(m) for m in self.answer_metric_names))
        self.conv = Conventions()
        self._corpus: Optional[dict] = None
        self._run: Optional[dict] = None
        self._identity: dict = {}
        self._queries: dict = {}

    # ---- data: subclasses fill corpus, queries (id -> text) and docs ----
    def load_rag(self) -> tuple[dict, list[Doc]]:
        raise NotImplementedError

    def eval_docs(self) -> list[Doc]:
        corpus, docs = self.load_rag()
        if not corpus:
            raise DataError(f"{self.data_path}: empty corpus")
        self._corpus = corpus
        self._queries = {d.id: d.meta["question"] for d in docs}
        return docs

    def ranked(self, doc: Doc) -> list[str]:
        """The documents retrieved for this question, best first (retrieval runs once, for every question)."""
        if self._run is None:
            if self._corpus is None:
                self.eval_docs()
            self._run, self._identity = retrieve_contexts(self.retrieval, self._corpus, self._queries, self.conv)
            self._ranked = {}
        if doc.id not in self._ranked:
            self._ranked[doc.id] = ranked_list(self._run, doc.id, self.conv)
        return self._ranked[doc.id]

    # ---- prompts ----
    def passage_text(self, doc_id: str) -> str:
        text = self._corpus[doc_id]
        return text[:self.doc_chars] if self.doc_chars else text

    def question_text(self, doc: Doc) -> str:
        return f"Question: {doc.meta['question']}\nAnswer:"

    def rag_prompt(self, doc: Doc) -> str:
        shown = self.ranked(doc)[:self.k]
        if self.order == "best_last":  # the best passage next to the question
            shown = shown[::-1]
        body = "\n\n".join(f"[{i}] {self.passage_text(d)}" for i, d in enumerate(shown, 1))
        return f"{self.passages_header}\n\n{body}\n\n{self.question_text(doc)}"

    def build_prompt_text(self, doc, ctx):
        return self.rag_prompt(doc)

    def _request(self, text: str, doc: Doc, ctx) -> GenerateRequest:
        params = self.params(doc, ctx)
        if ctx.apply_chat_template:
            msgs = ((("system", ctx.system_prompt),) if ctx.system_prompt else ()) + (("user", text),)
            return GenerateRequest(messages=msgs, params=params)
        return GenerateRequest(prompt=text, params=params)

    def requests(self, doc, ctx):
        reqs = [self._request(self.rag_prompt(doc), doc, ctx)]
        if self.closed_book:
            reqs.append(self._request(self.question_text(doc), doc, ctx))
        return reqs

    def sample_prompt(self, doc, ctx):
        return self.rag_prompt(doc)

    # ---- scoring ----
    def answer_metrics(self, doc: Doc, text: str) -> dict:
        """The task's own verifier on one answer; must include ``answer_accuracy``."""
        raise NotImplementedError

    def score_all(self, docs, responses, ctx):
        out = []
        for doc, resp in zip(docs, responses):
            texts = [c.text for c in resp[0]] if resp else []
            ranked = self.ranked(doc)
            ret = query_measures(ranked, doc.meta["relevant"], (self.k,), self.conv)
            rag = self.answer_metrics(doc, texts[0] if texts else "")
            extracted = rag.pop("_extracted", None)
            metrics = {"answer_accuracy": rag.pop("answer_accuracy")}
            extra = {"retrieved": ranked[:self.k], "gold": sorted(doc.meta["relevant"]),
                     "gold_rank": next((i + 1 for i, d in enumerate(ranked) if doc.meta["relevant"].get(d, 0) >= 1),
                                       None), **({"finish_reason": resp[0][0].finish_reason} if resp and resp[0] else {})}
            if self.closed_book and len(resp) > 1:
                closed = resp[1][0].text if resp[1] else ""
                metrics["closed_book_accuracy"] = self.answer_metrics(doc, closed)["answer_accuracy"]
                extra["closed_book_answer"] = closed
            metrics.update({m: ret[m] for m in (f"hit@{self.k}", f"recall@{self.k}", f"mrr@{self.k}")})
            metrics.update(rag)
            out.append(self.as_sample(doc, resp, Scored(metrics, extracted=extracted, extra=extra,
                                                        prompt=self.rag_prompt(doc), responses=texts), ctx))
        return out

    def breakdowns(self, samples):
        hit = f"hit@{self.k}"
        groups = {"gold_retrieved": [s for s in samples if s.metrics.get(hit) == 1.0],
                  "gold_missed": [s for s in samples if s.metrics.get(hit) == 0.0]}
        names = ["answer_accuracy"] + (["closed_book_accuracy"] if self.closed_book else [])
        return {g: {n: mean_metric([s.metrics.get(n) for s in ss]) for n in names} for g, ss in groups.items() if ss}

    def run_extra(self, samples):
        return {"retrieval": self._identity, "passages_in_prompt": self.k, "doc_chars": self.doc_chars,
                "corpus_size": len(self._corpus or {}), "closed_book": self.closed_book,
                "gold_retrieved": sum(1 for s in samples if s.metrics.get(f"hit@{self.k}") == 1.0)}


@register_task
class RagGeneric(_RagBase):
    name = "rag"
    description = ("RAG over a BEIR folder whose queries carry 'answers': retrieve top-k, generate, normalised "
                   "exact/contains match beside hit@k and the closed-book answer")
    own_options = _RagBase.own_options + ("match",)
    answer_metric_names = ("exact_match", "contains_match")
    known_options = own_options + RETRIEVAL_OPTIONS

    def __init__(self, data_path=None, **options):
        super().__init__(data_path, **options)
        self.match = str(options.get("match", "contains"))
        if self.match not in ("contains", "exact"):
            raise ValueError(f"task rag: match={self.match!r}: expected contains or exact")

    def load_rag(self):
        from pathlib import Path
        from evalkit.retrieval.formats import read_beir
        if not self.data_path:
            raise DataError("task rag: pass a BEIR folder with --data rag=DIR (corpus.jsonl, queries.jsonl with an "
                            "'answers' field, qrels/test.tsv)")
        data = read_beir(self.data_path, str(self.options.get("split", "test")))
        answers = {}
        for rec in jsonl_records(Path(self.data_path) / "queries.jsonl"):
            qid = str(rec.data.get("_id"))
            if qid in data.qrels:
                a = rec.data.get("answers")
                if a is None or a == [] or a == "":
                    raise DataError(f"{rec.where}: field 'answers' is missing or empty (task rag needs the gold "
                                    "answers of each judged query)")
                answers[qid] = [str(x) for x in (a if isinstance(a, list) else [a])]
        docs = [Doc(id=q, query=data.queries[q], target=answers[q],
                    meta={"question": data.queries[q], "relevant": dict(data.qrels[q])}) for q in data.qrels]
        return data.corpus, docs

    def answer_metrics(self, doc, text):
        pred = normalize_answer(text.strip().split("\n")[0] if text.strip() else "")
        golds = [normalize_answer(a) for a in doc.target]
        exact = float(any(pred == g for g in golds))
        contains = float(any(g and g in normalize_answer(text) for g in golds))
        return {"answer_accuracy": contains if self.match == "contains" else exact,
                "exact_match": exact, "contains_match": contains, "_extracted": pred}


@register_task
class RagGSM8K(_RagBase):
    name = "rag_gsm8k"
    description = ("RAG on GSM8K: each test question retrieves from the test set's worked solutions (its own is "
                   "the gold doc); GSM8K verifier on the answer, beside hit@k and closed-book accuracy")
    dataset = GSM8K_DATA
    passages_header = "Worked solutions of math problems:"
    gen_params = GenParams(max_tokens=16, temperature=0.0, stop=("\n", "<|im_end|>", "</s>"))
    answer_metric_names = ("exact_match_strict", "exact_match_flexible")  # GSM8K's, numeric is answer_accuracy

    def question_text(self, doc):
        # the answer prefix is in the prompt: the model writes the number, the verifier reads "#### N"
        return f"Question: {doc.meta['question']}\nAnswer: ####"

    def __init__(self, data_path=None, **options):
        super().__init__(data_path, **options)
        self._verifier = GSM8K()

    def load_rag(self):
        limit = self.options.get("limit_corpus")
        corpus, docs = {}, []
        for i, rec in enumerate(self.dataset.iter_records(str(self.options.get("split", "test")), self.data_path)):
            if limit is not None and i >= int(limit):
                break
            try:
                q, a = require(rec.data, "question"), require(rec.data, "answer")
            except Exception as e:
                raise DataError(f"{rec.where}: {e} (task {self.name})") from None
            did = f"sol{i}"
            corpus[did] = a
            docs.append(Doc(id=str(i), query=q, target=a, meta={"question": q, "relevant": {did: 1}}))
        return corpus, docs

    def answer_metrics(self, doc, text):
        scored = self._verifier.score_text(doc, "####" + text)
        m = dict(scored.metrics)
        return {"answer_accuracy": m.pop("exact_match_numeric"), **m, "_extracted": scored.extracted}
