"""Scoring retrieval runs into run records: a saved run (``evalkit score --task retrieval --run
run.trec --qrels qrels.txt``, the way sacrebleu serves MT) or one evalkit just computed
(``evalkit retrieve``). One sample per counted query carries every measure, so each figure gets its
CI (Wilson for hit@k, Student-t otherwise, from ``evalkit.scoring.stats``) and ``evalkit compare`` pairs two
retrievers query by query. The conventions and every mismatch between run and qrels are recorded."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from evalkit.taskapi import registry
from evalkit.taskapi.data import DataError
from evalkit.records.provenance import file_sha256
from evalkit.records import ModelInfo, new_run, write_run
from evalkit.retrieval.formats import RetrievalData, check_run_against_qrels, read_qrels, read_trec_run
from evalkit.run.config import RunConfig
from evalkit.run.post_process import finish_task


@dataclass
class Provenance:
    """Where a scored run came from: the retriever (or run file) as the record's model, the record's
    kind (``evaluation`` or ``rescore``), the seed, the judged data, and the record's label and tags."""
    model: ModelInfo
    kind: str
    seed: int
    data_source: str
    label: Optional[str] = None
    tags: tuple = ()
    engine: Optional[dict] = None  # the requests a model answered (a reranker's)


def build_record(task, docs: list, run: dict, source: Provenance, output_dir: Optional[str],
                 extra: Optional[dict] = None, timings: Optional[dict] = None) -> dict:
    """Score ``run`` ({query: {doc: score}}) for the task's docs and write the record."""
    t0 = time.time()
    samples = task.score_run(docs, run)
    if not samples:
        raise DataError(f"{source.data_source}: no query to score (the run answers none of the judged queries)")
    config = RunConfig(tasks=[task.name], seed=source.seed, data_paths={task.name: source.data_source},
                       task_options={task.name: dict(task.options)}, tags=list(source.tags))
    entry, rows = finish_task(task, samples, config)
    entry.extra.update({"run_check": _summarise(check_run_against_qrels(run, {d.id: d.target for d in docs})),
                        **(extra or {})})
    timings = {**(timings or {}), "score_s": round(time.time() - t0, 3)}
    timings["total_s"] = round(sum(timings.values()), 3)
    rec = new_run(source.kind, source.model, config.to_record(), {task.name: entry}, label=source.label,
                  timings=timings, **({"engine": source.engine} if source.engine else {}))
    if output_dir:
        rec.path = str(write_run(output_dir, rec, {task.name: rows}))
    return {"run": rec.to_dict(), "samples": {task.name: rows}}


def _summarise(check: dict) -> dict:
    return {"run_queries_not_in_qrels": len(check["run_queries_not_in_qrels"]),
            "run_queries_not_in_qrels_examples": check["run_queries_not_in_qrels"][:5],
            "qrels_queries_not_in_run": len(check["qrels_queries_not_in_run"]),
            "qrels_queries_not_in_run_examples": check["qrels_queries_not_in_run"][:5],
            "retrieved_unjudged": check["retrieved_unjudged"]}


def score_saved_run(task_name: str, run_path, qrels_path, options: Optional[dict] = None, seed: int = 1234,
                    name: Optional[str] = None, output_dir: Optional[str] = "results", tags=()) -> dict:
    """trec_eval-exact figures with CIs for a saved TREC (or JSON) run against TREC/BEIR qrels."""
    run_path, qrels_path = Path(run_path), Path(qrels_path)
    for p, what in ((run_path, "run"), (qrels_path, "qrels")):
        if not p.is_file():
            raise FileNotFoundError(f"{p}: no such {what} file")
    task = registry.get_task_class(task_name)(data_path=None, **(options or {}))
    if not hasattr(task, "score_run"):
        raise ValueError(f"task {task_name} is not a retrieval task; --run/--qrels score retrieval runs")
    qrels = read_qrels(qrels_path)
    run = read_trec_run(run_path)
    task.use_data(RetrievalData({}, {}, qrels, str(qrels_path)))
    docs = task.eval_docs()
    sha = file_sha256(run_path)
    model = ModelInfo(spec=f"run:{run_path}", name=name or run_path.stem, backend="trec_run",
                      identity={"run": str(run_path), "sha256": sha}, identity_hash=sha[:32])
    source = Provenance(model, "rescore", seed, str(qrels_path.resolve()), tags=tuple(tags))
    return build_record(task, docs, run, source, output_dir,
                        extra={"scored_run": {"path": str(run_path), "sha256": sha,
                                              "qrels_sha256": file_sha256(qrels_path)}})
