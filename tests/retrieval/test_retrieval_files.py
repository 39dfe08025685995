"""TREC/BEIR retrieval files, bad input, and `evalkit score --task retrieval --run --qrels` end to end:
a run record whose figures equal trec_eval's, and `evalkit compare` on two such records."""
from functools import partial
import json

import pytest

from evalkit.taskapi.data import DataError
from evalkit.records import load_run
from evalkit.retrieval.formats import read_beir, read_qrels, read_trec_run, write_trec_run
from conftest import evalkit_cli

QRELS = "q1 0 a 2\nq1 0 b 1\nq1 0 c 0\nq2 0 x 1\nq3 0 y 1\n"
RUN = "q1 Q0 a 1 1.0 s\nq1 Q0 b 2 1.0 s\nq1 Q0 d 3 0.5 s\nq2 Q0 z 1 3 s\nq2 Q0 x 2 2 s\nq9 Q0 x 1 2 s\n"


def write(tmp_path, name, text):
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


evalkit = partial(evalkit_cli, threads=None, timeout=300)


@pytest.mark.parametrize("text, needle", [
    ("q1 0 a 2\nq1 0 b\n", ":2: a qrels line has 4 fields"),
    ("q1 0 a 2\nq1 0 b high\n", ":2: field 'grade' must be an integer"),
    ("q1 0 a 2\nq1 0 a 1\n", ":2: doc 'a' is judged twice for query 'q1' (first at line 1)"),
    ("", "empty qrels file"),
])
def test_bad_qrels_name_file_and_line(tmp_path, text, needle):
    p = write(tmp_path, "qrels.txt", text)
    with pytest.raises(DataError) as e:
        read_qrels(p)
    assert str(p) in str(e.value) and needle in str(e.value)


@pytest.mark.parametrize("text, needle", [
    ("q1 Q0 a 1 1.0 s\nq1 Q0 a 2 0.5 s\n", ":2: doc 'a' appears twice in the ranking of query 'q1' (first at line 1)"),
    ("q1 Q0 a 1 1.0\n", ":1: a TREC run line has 6 fields"),
    ("q1 Q0 a 1 abc s\n", ":1: field 'score' must be a number"),
])
def test_bad_runs_name_file_and_line(tmp_path, text, needle):
    p = write(tmp_path, "run.trec", text)
    with pytest.raises(DataError) as e:
        read_trec_run(p)
    assert str(p) in str(e.value) and needle in str(e.value)


def test_beir_folder_and_its_errors(tmp_path):
    d = tmp_path / "beir"
    write(d, "corpus.jsonl", '{"_id": "d1", "title": "T", "text": "alpha"}\n{"_id": "d2", "text": "beta"}\n')
    write(d, "queries.jsonl", '{"_id": "q1", "text": "alpha?"}\n{"_id": "q2", "text": "none"}\n')
    write(d, "qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\tzz\t1\n")
    data = read_beir(d)
    assert data.corpus == {"d1": "T alpha", "d2": "beta"} and list(data.queries) == ["q1"]
    assert data.issues == {"judged_docs_outside_corpus": 1, "queries_without_judgments": 1}
    write(d, "qrels/test.tsv", "q1\td1\n")
    with pytest.raises(DataError, match=r"test.tsv:1: a BEIR qrels line has 3 tab-separated fields"):
        read_beir(d)
    write(d, "corpus.jsonl", "")
    with pytest.raises(DataError, match=r"corpus.jsonl: empty corpus"):
        read_beir(d)
    write(d, "corpus.jsonl", '{"_id": "d1"}\n')
    with pytest.raises(DataError, match=r"corpus.jsonl:1: field 'text' is missing"):
        read_beir(d)


def test_trec_run_round_trip(tmp_path):
    run = {"q1": {"a": 1.0, "b": 1.0, "c": 0.25}, "q2": {"x": -1.5}}
    assert read_trec_run(write_trec_run(tmp_path / "r.trec", run)) == run


def test_score_cli_writes_a_record_equal_to_trec_eval_and_compare_pairs_two(tmp_path):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, run = write(tmp_path, "qrels.txt", QRELS), write(tmp_path, "run.trec", RUN)
    r = evalkit("score", "--task", "retrieval", "--run", str(run), "--qrels", str(qrels), "--task-args",
                "k=1+3,queries=run", "--output", "res", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rec = load_run(tmp_path / r.stdout.split("run record: ")[1].strip())
    entry = rec.tasks["retrieval"]
    ref = pytrec_eval.RelevanceEvaluator(read_qrels(qrels), {"ndcg_cut.3", "success.1", "map", "P.3"}).evaluate(
        read_trec_run(run))
    for ours, theirs in (("ndcg@3", "ndcg_cut_3"), ("hit@1", "success_1"), ("map", "map"), ("P@3", "P_3")):
        expect = sum(v[theirs] for v in ref.values()) / len(ref)
        assert entry["metrics"][ours]["value"] == pytest.approx(expect, abs=1e-12)
        assert entry["metrics"][ours]["n"] == 2  # trec_eval's queries: q1, q2 (q3 not run, q9 not judged)
    assert entry["extra"]["conventions"]["queries"] == "run"
    assert entry["extra"]["run_check"]["run_queries_not_in_qrels"] == 1
    assert entry["extra"]["run_check"]["qrels_queries_not_in_run"] == 1

    # default convention: every judged query counts, q3 (no results) scores 0
    r = evalkit("score", "--task", "retrieval", "--run", str(run), "--qrels", str(qrels), "--output", "res",
                "--name", "base", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    base = r.stdout.split("run record: ")[1].strip()
    assert load_run(tmp_path / base).tasks["retrieval"]["metrics"]["hit@1"]["n"] == 3
    write(tmp_path, "run2.trec", RUN.replace("q2 Q0 x 2 2 s", "q2 Q0 x 2 4 s"))
    r = evalkit("score", "--task", "retrieval", "--run", "run2.trec", "--qrels", str(qrels), "--output", "res",
                "--name", "cand", cwd=tmp_path)
    cand = r.stdout.split("run record: ")[1].strip()
    r = evalkit("compare", base, cand, "--format", "json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert "retrieval" in json.dumps(report) and "hit@1" in json.dumps(report)


def test_score_cli_bad_input_is_one_line(tmp_path):
    qrels = write(tmp_path, "qrels.txt", "q1 0 a\n")
    run = write(tmp_path, "run.trec", RUN)
    r = evalkit("score", "--task", "retrieval", "--run", str(run), "--qrels", str(qrels), cwd=tmp_path)
    assert r.returncode == 2 and "qrels.txt:1: a qrels line has 4 fields" in r.stderr and "Traceback" not in r.stderr
    r = evalkit("score", "--task", "retrieval", "--run", str(run), cwd=tmp_path)
    assert r.returncode == 2 and "--qrels" in r.stderr
    r = evalkit("score", "--task", "retrieval", "--run", str(run), "--qrels", str(qrels), "--task-args", "gain=log",
                cwd=tmp_path)
    assert r.returncode == 2 and "gain" in r.stderr
