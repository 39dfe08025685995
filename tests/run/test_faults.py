"""Server faults against the real openai backend and the real CLI, from a fault-injecting
OpenAI-compatible server on 127.0.0.1 (tests/_fault_server.py). Each case checks the exit code, that
no traceback is printed, that the message says what failed, and what the cache holds afterwards."""
from __future__ import annotations

from functools import partial

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import evalkit_cli

from tests._fault_server import MODEL, FaultServer

pytestmark = [pytest.mark.server]

REPO = Path(__file__).resolve().parents[2]
QUESTIONS = {"How many legs do 2 cats have?": " 2 cats have 8 legs. #### 8",
             "What is 3 + 4?": " 3 + 4 = 7. #### 7",
             "What is 10 - 1?": " 10 - 1 = 9. #### 9"}
FAST = "max_retries=1,backoff_base=0.01,backoff_max=0.02,timeout=5"


evalkit = partial(evalkit_cli, unset=("OPENAI_API_KEY",), timeout=120)


def assert_clean_error(r, *needles):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    errors = [line for line in r.stderr.splitlines() if " error: " in line]
    assert len(errors) == 1, r.stderr
    for n in needles:
        assert n in errors[0], (n, errors[0])


@pytest.fixture
def gsm(tmp_path) -> Path:
    d = tmp_path / "gsm"
    d.mkdir()
    train = [{"question": f"Train question {i}?", "answer": f"Worked answer {i}. #### {i}"} for i in range(5)]
    (d / "train.jsonl").write_text("".join(json.dumps(x) + "\n" for x in train))
    test = [{"question": q, "answer": a} for q, a in QUESTIONS.items()]
    (d / "test.jsonl").write_text("".join(json.dumps(x) + "\n" for x in test))
    return d


@pytest.fixture
def server():
    with FaultServer(QUESTIONS) as srv:
        yield srv


def run_gsm(srv, gsm, tmp_path, *extra, model_args=FAST, base_url=None, env=None):
    return evalkit("run", "--model", f"openai:{MODEL}", "--base-url", base_url or srv.base_url,
                   "--model-args", model_args, "--tasks", "gsm8k", "--data", f"gsm8k={gsm}",
                   "--cache-dir", str(tmp_path / "cache"), "--output", str(tmp_path / "results"), *extra, env=env)


def cached_rows(tmp_path) -> int:
    db = tmp_path / "cache" / "responses.sqlite"
    if not db.exists():
        return 0
    with sqlite3.connect(db) as c:
        return c.execute("SELECT COUNT(*) FROM responses").fetchone()[0]


def records(tmp_path) -> list[dict]:
    root = tmp_path / "results"
    return [json.loads(p.read_text()) for p in sorted(root.glob("*/run.json"))] if root.exists() else []


def test_poisoning_sequence_bad_replies_then_healthy_server_then_rerun(server, gsm, tmp_path):
    server.fault_all = ("no_text",)  # every choice comes without "text"
    r = run_gsm(server, gsm, tmp_path)
    assert_clean_error(r, "3 request(s) got no usable answer", "choices[0] carries no text", "None of them was cached")
    assert cached_rows(tmp_path) == 0 and records(tmp_path) == []

    server.fault_all = None  # the server is fixed: everything is recomputed and scores right
    r = run_gsm(server, gsm, tmp_path)
    assert r.returncode == 0, r.stderr
    rec = records(tmp_path)[-1]
    assert rec["engine"]["computed"] == 3 and rec["engine"]["cached"] == 0
    assert rec["tasks"]["gsm8k"]["metrics"]["exact_match_strict"]["value"] == 1.0

    r = run_gsm(server, gsm, tmp_path)  # and a rerun is served from the cache, same scores
    assert r.returncode == 0 and "cached 3, computed 0" in r.stdout


def test_one_bad_reply_fails_only_its_request(server, gsm, tmp_path):
    server.faults = [("no_text",)]
    r = run_gsm(server, gsm, tmp_path, model_args=FAST + ",concurrency=1")
    assert_clean_error(r, "1 request(s) got no usable answer", "the 2 answered this run were")
    assert cached_rows(tmp_path) == 2 and records(tmp_path) == []
    r = run_gsm(server, gsm, tmp_path)
    assert r.returncode == 0 and "cached 2, computed 1" in r.stdout, r.stdout + r.stderr
    assert records(tmp_path)[-1]["tasks"]["gsm8k"]["metrics"]["exact_match_strict"]["value"] == 1.0


@pytest.mark.parametrize("fault, needle", [
    (("json", {"choices": []}), "no usable 'choices'"),
    (("json", [1, 2, 3]), "returned a JSON list"),
    (("json", {"choices": [{"text": None}]}), "carries no text"),
    (("raw", b"<html>502 bad gateway</html>", "text/html"), "body that is not JSON"),
])
def test_malformed_replies_are_named_and_never_cached(server, gsm, tmp_path, fault, needle):
    server.fault_all = fault
    r = run_gsm(server, gsm, tmp_path)
    assert_clean_error(r, needle, "/completions")
    assert cached_rows(tmp_path) == 0 and records(tmp_path) == []


def test_body_that_is_not_json_is_retried_first(server, gsm, tmp_path):
    server.faults = [("raw", b"not json", "text/plain")]
    r = run_gsm(server, gsm, tmp_path, model_args=FAST + ",concurrency=1")
    assert r.returncode == 0, r.stderr
    assert server.served == 4  # 3 requests, one of them twice


@pytest.mark.parametrize("status, needles", [
    (401, ("HTTP 401", "API key")),
    (503, ("failed after 2 attempts", "HTTP 503", "rerun to resume")),
])
def test_http_errors_are_one_line(server, gsm, tmp_path, status, needles):
    server.fault_all = ("status", status, {"error": {"message": f"test says {status}"}})
    r = run_gsm(server, gsm, tmp_path)
    assert_clean_error(r, *needles)
    assert cached_rows(tmp_path) == 0 and records(tmp_path) == []


def test_connection_refused_is_one_line(gsm, tmp_path):
    with FaultServer() as srv:
        url = srv.base_url
    r = evalkit("run", "--model", f"openai:{MODEL}", "--base-url", url, "--model-args", FAST,
                "--tasks", "gsm8k", "--data", f"gsm8k={gsm}", "--no-cache", "--no-output")
    assert_clean_error(r, "GET ", "/models", "Is the server running?")


def test_429_500_and_timeout_are_retried_and_finish_right(server, gsm, tmp_path):
    server.faults = [("status", 429, {"error": {"message": "slow down"}}), ("status", 500, {"error": "oops"}),
                     ("stall", 2.0)]
    r = run_gsm(server, gsm, tmp_path, model_args="max_retries=6,backoff_base=0.01,backoff_max=0.02,timeout=1.0,"
                                                  "concurrency=1")
    assert r.returncode == 0, r.stderr
    assert records(tmp_path)[-1]["tasks"]["gsm8k"]["metrics"]["exact_match_strict"]["value"] == 1.0


def test_server_answers_are_committed_one_by_one(server, gsm, tmp_path):
    """A failure on the third request keeps the two answered before it (no chunk-sized loss)."""
    server.faults = [None, None, ("status", 401, {"error": {"message": "key revoked"}})]
    r = run_gsm(server, gsm, tmp_path, model_args=FAST + ",concurrency=1")
    assert_clean_error(r, "HTTP 401")
    assert cached_rows(tmp_path) == 2
    r = run_gsm(server, gsm, tmp_path)
    assert r.returncode == 0 and "cached 2, computed 1" in r.stdout


def test_loglikelihood_on_a_server_without_echo_logprobs(server, tmp_path):
    d = tmp_path / "mmlu"
    for split in ("dev", "test"):
        (d / split).mkdir(parents=True)
        (d / split / f"anatomy_{split}.csv").write_text("What is 1+1?,1,2,3,4,B\nWhat is 2+2?,2,3,4,5,C\n")
    r = evalkit("run", "--model", f"openai:{MODEL}", "--base-url", server.base_url, "--model-args", FAST,
                "--tasks", "mmlu_anatomy", "--data", f"mmlu_anatomy={d}", "--num-fewshot", "1",
                "--cache-dir", str(tmp_path / "cache"), "--output", str(tmp_path / "results"))
    assert_clean_error(r, "prompt logprobs", "generation tasks work")
    assert cached_rows(tmp_path) == 0


def test_credentials_in_base_url_go_on_requests_and_nowhere_else(server, gsm, tmp_path):
    port = server.base_url.split(":")[2].split("/")[0]
    url = f"http://alice:sk-url-secret-123456@127.0.0.1:{port}/v1?api-key=query-secret-987&api-version=2024"
    r = run_gsm(server, gsm, tmp_path, base_url=url, env={"EVALKIT_PROGRESS_EVERY_S": "0"})
    assert r.returncode == 0, r.stderr
    # the query string reaches the server on every request, the userinfo as basic auth
    assert all("api-key=query-secret-987" in p and "api-version=2024" in p for p in server.paths)
    assert all(a and a.startswith("Basic ") for a in server.auth)
    written = [p for p in (tmp_path / "results").rglob("*") if p.is_file()] + [tmp_path / "cache" / "responses.sqlite"]
    for secret in ("sk-url-secret-123456", "query-secret-987", "alice"):
        assert secret not in r.stdout + r.stderr
        for p in written:
            assert secret.encode() not in p.read_bytes(), p
    rec = records(tmp_path)[-1]
    assert rec["model"]["args"]["base_url"] == f"http://REDACTED@127.0.0.1:{port}/v1?api-key=REDACTED&api-version=2024"


def test_progress_lines_when_stderr_is_not_a_terminal(server, gsm, tmp_path):
    server.faults = [("stall", 0.3)] * 3
    r = run_gsm(server, gsm, tmp_path, "--limit", "3", model_args=FAST + ",concurrency=1",
                env={"EVALKIT_PROGRESS_EVERY_S": "0.2"})
    assert r.returncode == 0, r.stderr
    assert "evalkit: openai generate: " in r.stderr and "/3 requests" in r.stderr


def test_fewshot_data_is_read_from_its_own_file(server, gsm, tmp_path):
    r = run_gsm(server, gsm, tmp_path)  # a folder: train.jsonl gives the shots
    assert r.returncode == 0, r.stderr
    r = evalkit("run", "--model", f"openai:{MODEL}", "--base-url", server.base_url, "--model-args", FAST,
                "--tasks", "gsm8k", "--data", f"gsm8k={gsm / 'test.jsonl'}",
                "--fewshot-data", f"gsm8k={gsm / 'train.jsonl'}", "--no-cache", "--output", str(tmp_path / "r2"))
    assert r.returncode == 0, r.stderr
    prompts = [b["prompt"] for b in server.bodies[-3:]]
    assert all(p.count("Question:") == 6 and "Worked answer 0" in p for p in prompts)
    for p in prompts:  # no test question appears among its own shots
        assert sum(q in p for q in QUESTIONS) == 1


def test_prompt_longer_than_context_is_counted_warned_and_marked(server, gsm, tmp_path, tiny_model_dir):
    r = run_gsm(server, gsm, tmp_path, "--gen-kwargs", "max_tokens=8",
                model_args=FAST + f",tokenizer={tiny_model_dir},max_length=96")
    assert r.returncode == 0, r.stderr
    assert "gsm8k: 3 of 3 prompts are longer than the model's context (88 tokens" in r.stderr
    rec_dir = next((tmp_path / "results").iterdir())
    rec = json.loads((rec_dir / "run.json").read_text())
    assert rec["tasks"]["gsm8k"]["truncated_prompts"] == 3
    rows = [json.loads(x) for x in (rec_dir / "samples_gsm8k.jsonl").read_text().splitlines()]
    assert all(row["extra"]["truncated"]["prompt_tokens"] > 88 for row in rows)
    sent = [b["prompt"] for b in server.bodies]
    assert all(isinstance(p, list) and len(p) == 88 for p in sent)  # token ids, cut to fit


@pytest.mark.slow
def test_sigkill_during_hf_generation_keeps_finished_batches(gsm, tmp_path, tiny_model_dir):
    """HF commits each generation batch: a kill after the first batch keeps it (the issue's run of
    24 GSM8K items killed after its first 8-row batch had left nothing)."""
    import signal
    import time

    args = ["run", "--model", f"hf:{tiny_model_dir}", "--model-args", "batch_size=1", "--tasks", "gsm8k",
            "--data", f"gsm8k={gsm}", "--num-fewshot", "0", "--gen-kwargs", "max_tokens=48",
            "--cache-dir", str(tmp_path / "cache"), "--output", str(tmp_path / "results")]
    env = {**os.environ, "EVALKIT_TORCH_THREADS": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "evalkit", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env, cwd=str(REPO), start_new_session=True)
    try:
        deadline = time.time() + 300
        while time.time() < deadline and proc.poll() is None:
            try:
                if cached_rows(tmp_path) >= 1:
                    break
            except sqlite3.OperationalError:  # the cache is being created
                pass
            time.sleep(0.2)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    kept = cached_rows(tmp_path)
    assert kept >= 1
    r = evalkit(*args, timeout=600)
    assert r.returncode == 0, r.stderr
    assert f"cached {kept}, computed {3 - kept}" in r.stdout


def test_table_is_printed_when_the_record_cannot_be_written(server, gsm, tmp_path):
    """The results folder passed the check before the run but is gone (a file now) at the end."""
    import time

    out = tmp_path / "results"
    out.mkdir()
    server.faults = [("stall", 1.5)]
    args = ["run", "--model", f"openai:{MODEL}", "--base-url", server.base_url, "--model-args", FAST + ",concurrency=1",
            "--tasks", "gsm8k", "--data", f"gsm8k={gsm}", "--cache-dir", str(tmp_path / "cache"), "--output", str(out)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "evalkit", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=str(REPO))
    deadline = time.time() + 60
    while not server.bodies and time.time() < deadline:
        time.sleep(0.05)
    out.rmdir()
    out.write_text("not a folder any more")
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 2 and "Traceback" not in stderr, stderr
    assert "exact_match_strict" in stdout  # the table came first
    assert f"could not write the run record to {out}" in stderr and "recomputes nothing" in stderr
    assert cached_rows(tmp_path) == 3


def test_api_key_goes_in_the_header_and_nowhere_else(server, gsm, tmp_path):
    key = "sk-evalkit-env-key-0123456789"
    r = run_gsm(server, gsm, tmp_path, env={"EVALKIT_TEST_KEY": key}, model_args=FAST + ",api_key_env=EVALKIT_TEST_KEY")
    assert r.returncode == 0, r.stderr
    assert set(server.auth) == {f"Bearer {key}"}
    written = [p for p in (tmp_path / "results").rglob("*") if p.is_file()] + [tmp_path / "cache" / "responses.sqlite"]
    assert key not in r.stdout + r.stderr and not any(key.encode() in p.read_bytes() for p in written)


def test_two_runs_on_one_cache_both_finish(server, gsm, tmp_path):
    args = ["run", "--model", f"openai:{MODEL}", "--base-url", server.base_url, "--model-args", FAST,
            "--tasks", "gsm8k", "--data", f"gsm8k={gsm}", "--cache-dir", str(tmp_path / "cache"), "--no-output"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, "-m", "evalkit", *args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env, cwd=str(REPO)) for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    assert cached_rows(tmp_path) == 3


def _interrupted_run(server, gsm, tmp_path, model_args: str, started: int):
    """A run whose process gets SIGINT once the server has seen ``started`` requests: (seconds from the
    signal to the exit, return code, stderr)."""
    import signal
    import time

    args = ["run", "--model", f"openai:{MODEL}", "--base-url", server.base_url, "--model-args", model_args,
            "--tasks", "gsm8k", "--data", f"gsm8k={gsm}", "--cache-dir", str(tmp_path / "cache"), "--no-output"]
    proc = subprocess.Popen([sys.executable, "-m", "evalkit", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=str(REPO))
    deadline = time.time() + 60
    while len(server.bodies) < started and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    t0 = time.time()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return time.time() - t0, proc.returncode, err


def test_sigint_keeps_what_finished(server, gsm, tmp_path):
    server.faults = [None, ("stall", 8.0)]
    _, rc, err = _interrupted_run(server, gsm, tmp_path, FAST + ",concurrency=1,timeout=20", 2)
    assert rc == 130 and "Traceback" not in err, err
    assert "finished work is in the cache" in err
    assert cached_rows(tmp_path) == 1


def test_a_host_that_does_not_resolve_fails_at_once(gsm, tmp_path):
    r = evalkit("run", "--model", f"openai:{MODEL}", "--base-url", "http://no-such-host.invalid/v1",
                "--tasks", "gsm8k", "--data", f"gsm8k={gsm}", "--no-cache", "--no-output", timeout=60)
    assert_clean_error(r, "cannot resolve no-such-host.invalid", "--base-url")


def test_sigint_during_requests_that_never_return_exits_at_once(server, gsm, tmp_path):
    """#38: Ctrl-C while requests hang (the server never answers; client timeout 600 s) did nothing for
    ~600 s, even twice. It now cancels them within seconds, keeps what finished and exits 130."""
    # two workers: the one that got the quick first answer sends the third request on its kept-alive
    # connection (cut connections must not be reopened and the request sent again)
    server.faults = [None] + [("stall", 120.0)] * 8
    seconds, rc, err = _interrupted_run(server, gsm, tmp_path, "max_retries=0,timeout=600,concurrency=2", 3)
    assert seconds < 5 and rc == 130 and "Traceback" not in err, (seconds, err)
    assert cached_rows(tmp_path) == 1
