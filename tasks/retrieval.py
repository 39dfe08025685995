"""Retrieval tasks: a retriever ranks corpus documents for each query; trec_eval-exact measures
(``evalkit.retrieval.measures``) with their conventions recorded, one sample per query.

- ``retrieval``: a BEIR-format local folder (``--data DIR``: corpus.jsonl, queries.jsonl,
  qrels/<split>.tsv), a BEIR dataset through ``datasets.load_dataset`` (``--data hub:BeIR/scifact``,
  its ``-qrels`` repo beside it; ``evalkit.retrieval.hub_beir``), or no data at all when scoring a saved run (``evalkit score --task retrieval
  --run run.trec --qrels qrels.txt``).
- ``xsum_retrieval``: known-item retrieval on XSum: each summary is a query, its own article the one
  relevant document among all articles (``--data`` the XSum JSONL, e.g. ../shared/data/xsum/test.jsonl).
- ``mbpp_retrieval``: known-item retrieval on MBPP: each problem's description (``text``) is a query,
  its own reference solution (``code``, CRLF read as LF) the one relevant document among all solutions
  of the split (``--data`` mbpp.jsonl or its folder; ``split=test``: task ids 11-510, as ``mbpp``).

Options (``--task-args``): ``k=1+5+10+100`` (cutoffs), ``gain=linear|exponential``,
``rel_threshold=1``, ``ties=trec|input``, ``queries=judged|run``, ``ignore_identical_ids=false``,
``split=test``, ``qrels_repo=``/``revision=`` (hub). Language models do not answer these tasks:
``evalkit retrieve`` runs the retrievers.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from evalkit.taskapi.data import DataError, jsonl_records
from evalkit.taskapi.items import Doc, Sample, Scored
from evalkit.scoring.metric import Metric
from evalkit.retrieval.conventions import Conventions, parse_ks
from evalkit.retrieval.formats import RetrievalData, read_beir
from evalkit.retrieval.measures import counted_queries, measure_names, query_measures, ranked_list
from evalkit.taskapi.task import Task, register_task

SHOWN = 10  # top documents kept in each sample (the TREC run file keeps them all)


@register_task
class RetrievalTask(Task):
    name = "retrieval"
    description = "Retrieval over a BEIR-format folder or a saved TREC run + qrels: hit, MRR, NDCG, recall, P, MAP"
    version = "1"
    output_type = "retrieval"
    family = "retrieval"

    def __init__(self, data_path: Optional[str] = None, **options):
        super().__init__(data_path, **options)
        known = {"k", "gain", "rel_threshold", "ties", "queries", "ignore_identical_ids", "split", "limit_corpus",
                 "qrels_repo", "revision"}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ValueError(f"task {self.name}: unknown option(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        self.conv = Conventions.from_options(options)
        self.ks = parse_ks(options.get("k"))
        self.metrics = tuple(Metric(n) for n in measure_names(self.ks))
        self._data: Optional[RetrievalData] = None

    # ---- data ----
    def load_data(self) -> RetrievalData:
        if not self.data_path:
            raise DataError(f"task {self.name}: pass a BEIR folder with --data DIR (corpus.jsonl, queries.jsonl, "
                            "qrels/test.tsv) or a hub dataset with --data hub:BeIR/scifact, or score a saved run "
                            "with --run and --qrels")
        split = str(self.options.get("split", "test"))
        if str(self.data_path).startswith("hub:"):
            from evalkit.retrieval.hub_beir import load_hub_beir
            return load_hub_beir(str(self.data_path)[4:], split, self.options.get("qrels_repo"),
                                 self.options.get("revision"))
        return read_beir(self.data_path, split)

    def data(self) -> RetrievalData:
        if self._data is None:
            self._data = self.load_data()
            if not self._data.corpus:
                raise DataError(f"{self._data.source}: empty corpus")
        return self._data

    def use_data(self, data: RetrievalData) -> None:
        """Qrels (and possibly no corpus) given directly: scoring a saved run."""
        self._data = data

    def eval_docs(self) -> list[Doc]:
        d = self.data()
        return [Doc(id=q, query=d.queries.get(q, q), target=dict(d.qrels[q])) for q in d.qrels]

    def counted_docs(self, docs: list[Doc], run: dict) -> list[Doc]:
        """The queries the conventions average over (``queries=run`` keeps those the run answered)."""
        keep = set(counted_queries(run, {d.id: None for d in docs}, self.conv))
        return [d for d in docs if d.id in keep]

    # ---- scoring ----
    def requests(self, doc, ctx):
        raise ValueError(f"task {self.name} ranks documents, no language model answers it: run a retriever with "
                         f"`evalkit retrieve --task {self.name} ...`, or score a saved run with "
                         f"`evalkit score --task {self.name} --run RUN --qrels QRELS`")

    def score_query(self, doc: Doc, scores: dict) -> Sample:
        ranked = ranked_list({doc.id: scores}, doc.id, self.conv)
        ms = query_measures(ranked, doc.target, self.ks, self.conv)
        top = [[d, scores[d]] for d in ranked[:SHOWN]]
        return self.as_sample(doc, top, Scored(
            ms, extracted=next((i + 1 for i, d in enumerate(ranked) if doc.target.get(d, 0) >= self.conv.rel_threshold),
                               None), extra={"n_retrieved": len(scores)}, prompt=doc.query, responses=top), None)

    def score_run(self, docs: list[Doc], run: dict) -> list[Sample]:
        return [self.score_query(d, run.get(d.id, {})) for d in self.counted_docs(docs, run)]

    def run_extra(self, samples):
        extra = {"conventions": self.conv.to_dict(), "cutoffs": list(self.ks),
                 "queries_without_results": sum(1 for s in samples if not s.extra.get("n_retrieved"))}
        if self._data is not None and self._data.issues:
            extra["data_issues"] = self._data.issues
        return extra

    def config_fingerprint(self):
        return {**super().config_fingerprint(), "conventions": self.conv.to_dict(), "cutoffs": list(self.ks)}


def read_known_item(path, limit: Optional[int] = None) -> RetrievalData:
    """XSum-style JSONL ({"document", "summary", "id"}): summary ``s<id>`` -> article ``<id>``."""
    path = Path(path)
    corpus, queries, qrels = {}, {}, {}
    for r in jsonl_records(path):
        rec, where = r.data, r.where
        for key in ("document", "summary", "id"):
            if key not in rec:
                raise DataError(f"{where}: field {key!r} is missing (task xsum_retrieval)")
        doc_id = str(rec["id"])
        if doc_id in corpus:
            raise DataError(f"{where}: id {doc_id!r} appears twice")
        corpus[doc_id] = rec["document"]
        queries["s" + doc_id], qrels["s" + doc_id] = rec["summary"], {doc_id: 1}
        if limit is not None and len(corpus) >= limit:
            break
    if not corpus:
        raise DataError(f"{path}: empty corpus (no records)")
    return RetrievalData(corpus, queries, qrels, str(path), {})


@register_task
class XSumKnownItem(RetrievalTask):
    name = "xsum_retrieval"
    description = "Known-item retrieval on XSum: each summary retrieves its own article among all articles"

    def load_data(self) -> RetrievalData:
        if not self.data_path:
            raise DataError(f"task {self.name}: pass the XSum JSONL with --data FILE (e.g. ../shared/data/xsum/test.jsonl)")
        limit = self.options.get("limit_corpus")
        return read_known_item(self.data_path, int(limit) if limit else None)


def read_mbpp_known_item(path, split: str = "test", limit: Optional[int] = None) -> RetrievalData:
    """MBPP (``text``, ``code``, ``task_id``): description ``q<id>`` -> solution ``<id>``, the split's ids."""
    from evalkit.tasks.mbpp import split_reader
    corpus, queries, qrels = {}, {}, {}
    for rec in split_reader("mbpp.jsonl", "test.jsonl")(Path(path), split):
        for key in ("text", "code", "task_id"):
            if key not in rec.data:
                raise DataError(f"{rec.where}: field {key!r} is missing (task mbpp_retrieval)")
        doc_id = str(rec.data["task_id"])
        if doc_id in corpus:
            raise DataError(f"{rec.where}: task_id {doc_id} appears twice")
        corpus[doc_id] = str(rec.data["code"]).replace("\r\n", "\n")
        queries["q" + doc_id], qrels["q" + doc_id] = str(rec.data["text"]), {doc_id: 1}
        if limit is not None and len(corpus) >= limit:
            break
    if not corpus:
        raise DataError(f"{path}: empty corpus (no MBPP problems in split {split!r})")
    return RetrievalData(corpus, queries, qrels, f"{path}[{split}]", {})


@register_task
class MBPPKnownItem(RetrievalTask):
    name = "mbpp_retrieval"
    description = "Known-item retrieval on MBPP: each description retrieves its own solution among the split's solutions"

    def load_data(self) -> RetrievalData:
        if not self.data_path:
            raise DataError(f"task {self.name}: pass MBPP's mbpp.jsonl (or its folder) with --data, "
                            "e.g. ../shared/data/mbpp/mbpp.jsonl")
        limit = self.options.get("limit_corpus")
        return read_mbpp_known_item(self.data_path, str(self.options.get("split", "test")), int(limit) if limit else None)
