"""The generic retrieval task on a BEIR dataset through ``datasets.load_dataset`` (``--data hub:NAME``):
a local dataset in the hub's BeIR layout (configs corpus/queries in a README, parquet files written by
``datasets``, a ``-qrels`` folder of TSV splits) read by the same calls the hub path makes, scoring exactly
as the same data in a BEIR folder; the hub itself unreachable here: a one-line error."""
import json

import pytest

from conftest import shared, evalkit_cli
from evalkit.records import load_run

datasets = pytest.importorskip("datasets")
pytest.importorskip("bm25s")

README = """---
configs:
- config_name: corpus
  data_files:
  - split: corpus
    path: corpus.parquet
- config_name: queries
  data_files:
  - split: queries
    path: queries.parquet
---
"""


def evalkit(*args, cwd):
    return evalkit_cli(*args, cwd=cwd, threads=None, env={"HF_DATASETS_CACHE": str(cwd / "hf-cache"), "HF_HUB_OFFLINE": "1"})


def mbpp_beir(n=40):
    rows = [json.loads(line) for line in open(shared("mbpp/mbpp.jsonl"), encoding="utf-8")][10:10 + n]
    corpus = [{"_id": f"0{r['task_id']}", "title": "", "text": r["code"]} for r in rows]  # leading 0: ids stay strings
    queries = [{"_id": f"q{r['task_id']}", "text": r["text"]} for r in rows]
    qrels = [(f"q{r['task_id']}", f"0{r['task_id']}", 1) for r in rows]
    return corpus, queries, qrels


def write_layouts(tmp_path):
    corpus, queries, qrels = mbpp_beir()
    hub = tmp_path / "mbppbeir"
    (tmp_path / "mbppbeir-qrels").mkdir(parents=True, exist_ok=True)
    hub.mkdir()
    (hub / "README.md").write_text(README)
    datasets.Dataset.from_list(corpus).to_parquet(str(hub / "corpus.parquet"))
    datasets.Dataset.from_list(queries).to_parquet(str(hub / "queries.parquet"))  # one builder per repo
    tsv = "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in qrels)
    (tmp_path / "mbppbeir-qrels" / "test.tsv").write_text(tsv)
    folder = tmp_path / "beirfolder"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in corpus))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels" / "test.tsv").write_text(tsv)
    return hub, folder


def record(r, tmp_path):
    assert r.returncode == 0, r.stderr[-2000:]
    path = next(line.split("run record: ")[1] for line in r.stdout.splitlines() if line.startswith("run record: "))
    return load_run(tmp_path / path).tasks["retrieval"]


def test_local_dataset_through_load_dataset_scores_as_the_beir_folder(tmp_path):
    hub, folder = write_layouts(tmp_path)
    a = record(evalkit("retrieve", "--task", "retrieval", "--data", f"hub:{hub}", "--task-args", "k=1+10",
                       "--output", "res", cwd=tmp_path), tmp_path)
    b = record(evalkit("retrieve", "--task", "retrieval", "--data", str(folder), "--task-args", "k=1+10",
                       "--output", "res", cwd=tmp_path), tmp_path)
    assert a["extra"]["corpus_size"] == b["extra"]["corpus_size"] == 40 and a["metrics"]["mrr@10"]["n"] == 40
    assert {k: v["value"] for k, v in a["metrics"].items()} == {k: v["value"] for k, v in b["metrics"].items()}
    assert a["metrics"]["hit@10"]["value"] > 0.2  # BM25 finds some solutions from their descriptions


def test_null_title_and_text_read_as_empty_through_both_paths(tmp_path):
    from evalkit.retrieval.formats import read_beir
    from evalkit.retrieval.hub_beir import load_hub_beir
    hub, folder = write_layouts(tmp_path)
    corpus = [{"_id": "d1", "title": None, "text": "alpha"}, {"_id": "d2", "title": "T", "text": None},
              {"_id": "d3", "title": None, "text": None}, {"_id": "d4", "title": "T", "text": "beta"}]
    queries = [{"_id": "q1", "text": None}, {"_id": "q2", "text": "beta?"}]
    datasets.Dataset.from_list(corpus).to_parquet(str(hub / "corpus.parquet"))
    datasets.Dataset.from_list(queries).to_parquet(str(hub / "queries.parquet"))
    (folder / "corpus.jsonl").write_text("".join(json.dumps(c) + "\n" for c in corpus))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    tsv = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td4\t1\n"
    for p in (tmp_path / "mbppbeir-qrels" / "test.tsv", folder / "qrels" / "test.tsv"):
        p.write_text(tsv)
    a, b = load_hub_beir(str(hub)), read_beir(folder)
    assert a.corpus == b.corpus == {"d1": "alpha", "d2": "T", "d3": "", "d4": "T beta"}
    assert a.queries == b.queries == {"q1": "", "q2": "beta?"}


def test_hub_failure_and_bad_fields_are_one_line_errors(tmp_path):
    r = evalkit("retrieve", "--task", "retrieval", "--data", "hub:BeIR/scifact", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert "BeIR/scifact" in line and "local BEIR folder" in line and "--data DIR" in line
    hub, _ = write_layouts(tmp_path)
    datasets.Dataset.from_list([{"_id": "1", "title": "t", "body": "x"}]).to_parquet(str(hub / "corpus.parquet"))
    r = evalkit("retrieve", "--task", "retrieval", "--data", f"hub:{hub}", cwd=tmp_path)
    assert r.returncode == 2 and "field 'text' is missing" in r.stderr and f"hub:{hub}/corpus" in r.stderr
    hub, _ = write_layouts(tmp_path / "again")
    r = evalkit("retrieve", "--task", "retrieval", "--data", f"hub:{hub}", "--task-args", "split=dev", cwd=tmp_path)
    assert r.returncode == 2 and "split 'dev'" in r.stderr and "Traceback" not in r.stderr, r.stderr[-3000:]
