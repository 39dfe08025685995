"""The end-to-end RAG tasks through `evalkit run` on the bundled model: retrieval by evalkit's own
retrievers (BM25; dense all-MiniLM-L6-v2 embeddings as cached requests), the top-k passages in the
prompt, the answer scored by the task's verifier, answer accuracy beside hit@k (with CIs), the
split by whether the gold document was retrieved, and the closed-book answer."""
from functools import partial
import json
from pathlib import Path

import pytest

from conftest import shared, evalkit_cli
from evalkit.records import load_run

pytest.importorskip("bm25s")


evalkit = partial(evalkit_cli, timeout=900)


def _record(r, cwd):
    assert r.returncode == 0, r.stderr[-3000:]
    path = next(line.split("run record: ")[1] for line in r.stdout.splitlines() if line.startswith("run record: "))
    rec = load_run(cwd / path)
    rows = [json.loads(x) for x in (cwd / path / rec.tasks[next(iter(rec.tasks))]["samples_file"]).open()]
    return rec, rows


def _check_rag_record(task, rows, k, n, verify):
    m = task["metrics"]
    for name in ("answer_accuracy", "closed_book_accuracy", f"hit@{k}", f"mrr@{k}"):
        assert m[name]["n"] == n and m[name]["ci_low"] is not None, (name, m[name])
        assert m[name]["ci_low"] <= m[name]["value"] <= m[name]["ci_high"]
    hits = 0
    for row in rows:
        gold, shown = set(row["extra"]["gold"]), row["extra"]["retrieved"]
        hit = bool(gold & set(shown))
        hits += hit
        assert row["metrics"][f"hit@{k}"] == float(hit) and len(shown) == k
        assert row["metrics"]["answer_accuracy"] == verify(row, row["responses"][0])
        assert row["metrics"]["closed_book_accuracy"] == verify(row, row["extra"]["closed_book_answer"])
    groups = task["breakdowns"]
    assert task["extra"]["gold_retrieved"] == hits
    if hits:
        assert groups["gold_retrieved"]["answer_accuracy"]["n"] == hits
    if hits < n:
        assert groups["gold_missed"]["answer_accuracy"]["n"] == n - hits


def _gsm8k_verify(row, text):
    """The GSM8K task's own verifier on the answer the prompt's "####" begins."""
    from evalkit.taskapi.items import Doc
    from evalkit.tasks.gsm8k import GSM8K
    return GSM8K().score_text(Doc(id=row["doc_id"], query="", target=row["target"]), "####" + text
                              ).metrics["exact_match_numeric"]


@pytest.fixture(scope="module")
def hf_gsm8k_run(tmp_path_factory, tiny_model_dir):
    tmp = tmp_path_factory.mktemp("rag_hf")
    r = evalkit("run", "--model", "hf:smollm2-135m", "--tasks", "rag_gsm8k", "--data",
                f"rag_gsm8k={shared('gsm8k')}", "--limit", "8", "--task-args", "rag_gsm8k:k=3",
                "--cache-dir", str(tmp / "cache"), "--output", "res", cwd=tmp)
    return _record(r, tmp)


@pytest.mark.slow
def test_rag_gsm8k_end_to_end_hf(hf_gsm8k_run):
    rec, rows = hf_gsm8k_run
    task = rec.tasks["rag_gsm8k"]
    _check_rag_record(task, rows, 3, 8, _gsm8k_verify)
    assert task["extra"]["retrieval"]["retriever"] == "bm25" and task["extra"]["corpus_size"] == 1319
    # the gold solution, when retrieved, is in the prompt verbatim (cut at doc_chars)
    data = [json.loads(x) for x in open(shared("gsm8k", "test.jsonl"), encoding="utf-8")][:8]
    for row in rows:
        gold = data[int(row["doc_id"])]["answer"]
        assert (gold[:1500] in row["prompt"]) == bool(row["metrics"]["hit@3"])
    print("\nrag_gsm8k hf:", {k: round(v["value"], 3) for k, v in task["metrics"].items()},
          {g: {k: v["value"] for k, v in ms.items()} for g, ms in task["breakdowns"].items()})


def _beir(tmp_path):
    d = tmp_path / "facts"
    (d / "qrels").mkdir(parents=True)
    facts = {"d1": "Paris is the capital of France.", "d2": "Berlin is the capital of Germany.",
             "d3": "The Nile is the longest river in Africa.", "d4": "Mount Everest is the highest mountain on Earth.",
             "d5": "Water boils at 100 degrees Celsius at sea level.", "d6": "The Pacific is the largest ocean."}
    (d / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n"
                                            for k, v in facts.items()))
    qs = [("q1", "What is the capital of France?", ["Paris"], "d1"),
          ("q2", "What is the capital of Germany?", "Berlin", "d2"),
          ("q3", "What is the highest mountain on Earth?", ["Mount Everest", "Everest"], "d4")]
    (d / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t, "answers": a}) + "\n"
                                             for q, t, a, _ in qs))
    (d / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{g}\t1\n" for q, *_, g in qs))
    return d


def _contains_verify(row, text):
    from evalkit.tasks.rag import normalize_answer
    return float(any(normalize_answer(a) in normalize_answer(text) for a in row["target"]))


@pytest.mark.slow
def test_rag_generic_beir_dense_retrieval_hf(tmp_path, tiny_model_dir):
    pytest.importorskip("transformers")
    from evalkit.retrieval.embed_models import resolve_embedder
    try:
        resolve_embedder("all-minilm-l6-v2")
    except ValueError as e:
        pytest.fail(f"all-MiniLM-L6-v2, which scripts/install.sh installs, is missing: {e}")
    d = _beir(tmp_path)
    args = ("run", "--model", "hf:smollm2-135m", "--tasks", "rag", "--data", f"rag={d}",
            "--task-args", f"rag:k=2,retriever=dense,embedding_cache={tmp_path / 'emb.sqlite'}",
            "--cache-dir", str(tmp_path / "cache"), "--output", "res")
    rec, rows = _record(evalkit(*args, cwd=tmp_path), tmp_path)
    task = rec.tasks["rag"]
    _check_rag_record(task, rows, 2, 3, _contains_verify)
    ret = task["extra"]["retrieval"]
    assert ret["retriever"] == "dense" and ret["files"]["model.safetensors"] and ret["embeddings"]["computed"] == 9
    assert task["metrics"]["hit@2"]["value"] == 1.0  # MiniLM finds each fact among six
    for row in rows:
        assert row["metrics"]["exact_match"] <= row["metrics"]["contains_match"]
    # a rerun embeds nothing (cached embed requests) and generates nothing (cached answers)
    rec2, _ = _record(evalkit(*args, cwd=tmp_path), tmp_path)
    assert rec2.tasks["rag"]["extra"]["retrieval"]["embeddings"]["computed"] == 0
    assert rec2.tasks["rag"]["metrics"] == task["metrics"]


def test_rag_bad_input_is_a_clear_error(tmp_path):
    d = _beir(tmp_path)
    lines = (d / "queries.jsonl").read_text().splitlines()
    lines[1] = json.dumps({"_id": "q2", "text": "What is the capital of Germany?"})
    (d / "queries.jsonl").write_text("\n".join(lines) + "\n")
    r = evalkit("run", "--model", "hf:smollm2-135m", "--tasks", "rag", "--data", f"rag={d}", "--dry-run",
                cwd=tmp_path)
    assert r.returncode == 2 and "queries.jsonl:2" in r.stderr and "answers" in r.stderr, r.stderr[-1500:]
    assert "Traceback" not in r.stderr
    r = evalkit("run", "--model", "hf:smollm2-135m", "--tasks", "rag_gsm8k", "--task-args", "rag_gsm8k:kk=3",
                "--data", f"rag_gsm8k={shared('gsm8k')}", "--dry-run", cwd=tmp_path)
    assert r.returncode == 2 and "kk" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.vllm
@pytest.mark.slow
def test_rag_gsm8k_end_to_end_vllm(tmp_path, vllm_backend, hf_gsm8k_run):
    """The same run on the session's vLLM engine (in process: a second engine would cost a minute)."""
    import evalkit as api
    run = api.evaluate(vllm_backend, tasks=["rag_gsm8k"], data={"rag_gsm8k": str(shared("gsm8k"))}, limit=8,
                       task_args={"rag_gsm8k": {"k": "3"}}, cache_dir=str(tmp_path / "cache"),
                       output=str(tmp_path / "res"))
    rec = load_run(run.path)
    rows = [json.loads(x) for x in (Path(run.path) / rec.tasks["rag_gsm8k"]["samples_file"]).open()]
    task = rec.tasks["rag_gsm8k"]
    _check_rag_record(task, rows, 3, 8, _gsm8k_verify)
    assert rec.model["backend"] == "vllm"
    hf_rows = {row["doc_id"]: row for row in hf_gsm8k_run[1]}
    for row in rows:  # the same retrieval and prompts as the transformers run
        assert row["prompt"] == hf_rows[row["doc_id"]]["prompt"]
        assert row["metrics"]["hit@3"] == hf_rows[row["doc_id"]]["metrics"]["hit@3"]
    same = sum(row["responses"] == hf_rows[row["doc_id"]]["responses"] for row in rows)
    print(f"\nrag_gsm8k vllm: {same}/8 answers identical to transformers'",
          {k: round(v["value"], 3) for k, v in task["metrics"].items()})


def test_rag_retrieval_step_saved_run_and_hybrid(tmp_path):
    """The retrieval step alone: a saved TREC run is read as is (unknown doc ids refused), and the
    hybrid retriever fuses evalkit's BM25 and dense runs."""
    from evalkit.retrieval.conventions import Conventions
    from evalkit.retrieval.formats import write_trec_run
    from evalkit.retrieval.rag_context import RagRetrieval, retrieve_contexts
    corpus = {"d1": "Paris is the capital of France.", "d2": "Berlin is the capital of Germany.",
              "d3": "The Nile is a river."}
    queries = {"q1": "capital of France", "q2": "a long river"}
    saved = write_trec_run(tmp_path / "r.trec", {"q1": {"d2": 2.0, "d1": 1.0}, "q2": {"d3": 1.0}})
    run, ident = retrieve_contexts(RagRetrieval.from_options({"run": str(saved)}), corpus, queries, Conventions())
    assert run == {"q1": {"d2": 2.0, "d1": 1.0}, "q2": {"d3": 1.0}} and ident["retriever"] == "saved run"
    (tmp_path / "bad.trec").write_text("q1 Q0 d9 1 1.0 x\n")
    with pytest.raises(ValueError, match="not in the corpus"):
        retrieve_contexts(RagRetrieval.from_options({"run": str(tmp_path / "bad.trec")}), corpus, queries, Conventions())
    with pytest.raises(ValueError, match="bm25, dense or hybrid"):
        RagRetrieval.from_options({"retriever": "splade"})
    pytest.importorskip("transformers")
    from evalkit.retrieval.embed_models import resolve_embedder
    try:
        resolve_embedder("all-minilm-l6-v2")
    except ValueError as e:
        pytest.fail(f"all-MiniLM-L6-v2, which scripts/install.sh installs, is missing: {e}")
    spec = RagRetrieval.from_options({"retriever": "hybrid", "embedding_cache": str(tmp_path / "e.sqlite")})
    run, ident = retrieve_contexts(spec, corpus, queries, Conventions())
    assert ident["retriever"] == "hybrid" and ident["fusion"] == "rrf" and ident["dense"]["files"]
    assert max(run["q1"], key=run["q1"].get) == "d1" and max(run["q2"], key=run["q2"].get) == "d3"
