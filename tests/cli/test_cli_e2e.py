"""`evalkit run` end to end on the real tiny model: records, resume after SIGKILL, clear errors."""
from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import evalkit_cli

from tests.conftest import shared


evalkit = evalkit_cli


def only_run(results: Path) -> Path:
    runs = [p for p in results.iterdir() if (p / "run.json").exists()]
    assert len(runs) == 1, runs
    return runs[0]


@pytest.mark.slow
def test_run_prints_table_and_writes_record(tmp_path, tiny_model_dir):
    wiki = tmp_path / "wiki"
    wiki.mkdir()
    (wiki / "wiki.test.raw").write_text(
        " \n = Alpha = \n \n Alpha is a letter of the Greek alphabet . \n \n = = Use = = \n \n It is used in"
        " science . \n \n = Beta = \n \n Beta is the second letter @-@ after alpha . \n \n")
    out = tmp_path / "results"
    r = evalkit("run", "--model", f"hf:{tiny_model_dir}", "--tasks", "wikitext,gsm8k", "--limit", "2",
                "--data", f"wikitext={wiki}", "--data", f"gsm8k={shared('gsm8k')}", "--gen-kwargs", "max_tokens=24",
                "--output", str(out), "--cache-dir", str(tmp_path / "cache"))
    assert r.returncode == 0, r.stderr
    assert "word_perplexity" in r.stdout and "exact_match_strict" in r.stdout and "± 95% CI" in r.stdout
    run_dir = only_run(out)
    run = json.loads((run_dir / "run.json").read_text())
    assert run["schema_version"] == 2 and run["kind"] == "evaluation" and run["model"]["backend"] == "hf"
    assert run["model"]["identity"]["content"]["weights"], "weights are hashed into the identity"
    threads = run["model"]["runtime"]["cpu_threads"]  # the thread choice, outside the identity
    want = {"threads": 1, "source": "EVALKIT_TORCH_THREADS"}
    if os.environ.get("OMP_WAIT_POLICY"):  # the user's wait policy is recorded, never set by evalkit
        want["omp_wait_policy"] = os.environ["OMP_WAIT_POLICY"]
    assert threads == want, threads
    assert "threads" not in json.dumps(run["model"]["identity"])
    assert set(run["tasks"]) == {"wikitext", "gsm8k"}
    wt = run["tasks"]["wikitext"]
    assert wt["n_docs"] == 2 and wt["metrics"]["word_perplexity"]["kind"] == "corpus"
    assert 1 < wt["metrics"]["word_perplexity"]["value"] < 1e4
    gs = run["tasks"]["gsm8k"]
    assert gs["metrics"]["exact_match_strict"]["n"] == 2 and gs["prompt_hash"] and gs["dataset_fingerprint"]
    assert run["versions"]["transformers"] and run["timings"]["total_s"] > 0
    rows = [json.loads(line) for line in (run_dir / "samples_gsm8k.jsonl").read_text().splitlines()]
    assert [r["doc_id"] for r in rows] == ["0", "1"]
    assert rows[0]["prompt"].count("Question:") == 6 and rows[0]["responses"] and "exact_match_numeric" in rows[0]["metrics"]


def _cached_rows(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(str(db), timeout=1)
        try:
            return con.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


@pytest.mark.slow
def test_sigkill_then_rerun_recomputes_nothing_finished(tmp_path, tiny_model_dir):
    n = 12  # room for the kill to land mid-run on a fast machine (the cache is polled every 20 ms)
    # zero-shot prompts (~80 tokens, not ~900): three real runs, killed, resumed and fresh, stay small
    args = ["run", "--model", f"hf:{tiny_model_dir}", "--model-args", "chunk_size=2", "--tasks", "gsm8k",
            "--limit", str(n), "--data", f"gsm8k={shared('gsm8k')}", "--num-fewshot", "0",
            "--gen-kwargs", "max_tokens=12"]
    cache = tmp_path / "cache"
    env = {**os.environ, "EVALKIT_TORCH_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "evalkit", *args, "--output", str(tmp_path / "killed"),
                             "--cache-dir", str(cache)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = cache / "responses.sqlite"
    deadline = time.time() + 400
    while _cached_rows(db) < 2 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = _cached_rows(db)
    assert 2 <= done_before < n, f"kill landed mid-run ({done_before} of {n} cached)"
    assert not (tmp_path / "killed").exists() or not any((tmp_path / "killed").glob("*/run.json"))

    r = evalkit(*args, "--output", str(tmp_path / "resumed"), "--cache-dir", str(cache))
    assert r.returncode == 0, r.stderr
    resumed = json.loads((only_run(tmp_path / "resumed") / "run.json").read_text())
    assert resumed["engine"]["cached"] == done_before
    assert resumed["engine"]["computed"] == n - done_before

    r = evalkit(*args, "--output", str(tmp_path / "fresh"), "--cache-dir", str(tmp_path / "cache2"))
    assert r.returncode == 0, r.stderr
    fresh_dir = only_run(tmp_path / "fresh")
    fresh = json.loads((fresh_dir / "run.json").read_text())
    assert fresh["engine"]["computed"] == n
    assert resumed["tasks"]["gsm8k"]["metrics"] == fresh["tasks"]["gsm8k"]["metrics"]
    a = (only_run(tmp_path / "resumed") / "samples_gsm8k.jsonl").read_text()
    assert a == (fresh_dir / "samples_gsm8k.jsonl").read_text()


def test_bad_flags_name_the_flag_and_allowed_values(tmp_path):
    r = evalkit("run", "--model", "foo:x", "--tasks", "gsm8k")
    assert r.returncode == 2 and "unknown backend 'foo'" in r.stderr and "hf, vllm, openai" in r.stderr
    r = evalkit("run", "--model", "hf:x", "--tasks", "gsm8kk")
    assert r.returncode == 2 and "unknown task 'gsm8kk'" in r.stderr and "gsm8k" in r.stderr
    r = evalkit("run", "--model", "hf:x", "--tasks", "gsm8k", "--gen-kwargs", "max_token=3")
    assert r.returncode == 2 and "--gen-kwargs" in r.stderr and "max_tokens" in r.stderr
    r = evalkit("run", "--model", "hf:x", "--tasks", "gsm8k", "--data", "wikitext=/x")
    assert r.returncode == 2 and "--data names task(s) not being run: wikitext" in r.stderr


def test_malformed_local_dataset_fails_with_file_line_field(tmp_path):
    d = tmp_path / "gsm"
    d.mkdir()
    (d / "train.jsonl").write_text('{"question": "q", "answer": "#### 1"}\n' * 5)
    (d / "test.jsonl").write_text('{"question": "q", "answer": "#### 1"}\n{"question": "q2", "answr": "x"}\n')
    r = evalkit("run", "--model", "hf:does-not-matter", "--tasks", "gsm8k", "--data", f"gsm8k={d}")
    assert r.returncode == 2
    assert f"{d / 'test.jsonl'}:2: field 'answer' is missing" in r.stderr
    (d / "test.jsonl").write_text('{"question": "q", "answer": "#### 1"}\n{"question": \n')
    r = evalkit("run", "--model", "hf:does-not-matter", "--tasks", "gsm8k", "--data", f"gsm8k={d}")
    assert r.returncode == 2 and f"{d / 'test.jsonl'}:2: invalid JSON" in r.stderr


@pytest.mark.slow
def test_a_new_benchmark_is_one_small_file(tmp_path, tiny_model_dir):
    plugin = tmp_path / "plugins"
    plugin.mkdir()
    (plugin / "capitals.py").write_text(textwrap.dedent('''
        from evalkit.taskapi.data import DataSource, require
        from evalkit.taskapi.task import Doc, MultipleChoiceTask, register_task

        @register_task
        class Capitals(MultipleChoiceTask):
            name = "capitals"
            description = "capital cities, multiple choice"
            dataset = DataSource(local_files={"test": ["capitals.jsonl"]})

            def record_to_doc(self, r, i):
                return Doc(id=str(i), query=f"Q: What is the capital of {require(r, 'country')}?\\nA:",
                           choices=require(r, "choices", list), gold=require(r, "gold", int))
    '''))
    data = tmp_path / "data"
    data.mkdir()
    rows = [("France", ["Paris", "Rome", "Oslo"], 0), ("Italy", ["Madrid", "Rome", "Lima"], 1),
            ("Japan", ["Seoul", "Beijing", "Tokyo"], 2)]
    (data / "capitals.jsonl").write_text("".join(json.dumps({"country": c, "choices": ch, "gold": g}) + "\n"
                                                 for c, ch, g in rows))
    r = evalkit("tasks", "--include-path", str(plugin))
    assert re.search(r"^capitals +capital cities, multiple choice$", r.stdout, re.M)
    r = evalkit("run", "--model", f"hf:{tiny_model_dir}", "--tasks", "capitals", "--include-path", str(plugin),
                "--data", f"capitals={data}", "--output", str(tmp_path / "res"), "--cache-dir", str(tmp_path / "c"))
    assert r.returncode == 0, r.stderr
    run = json.loads((only_run(tmp_path / "res") / "run.json").read_text())
    assert run["tasks"]["capitals"]["metrics"]["acc"]["n"] == 3
    assert run["engine"]["unique"] == 9
