"""Reasoning models end to end through `evalkit run` against a real local OpenAI-compatible server
that answers with reasoning fields or <think> markers (tests/_reasoning_server.py): stripping vs
--keep-thinking on GSM8K, budgets and usage in the record, cached reruns, chat_template_kwargs in
the body and the cache identity, and API reasoning models' parameters."""
from __future__ import annotations

from functools import partial

import json
from pathlib import Path

import pytest

from conftest import evalkit_cli

from tests._reasoning_server import MODEL, ReasoningServer

pytestmark = [pytest.mark.server]

REPO = Path(__file__).resolve().parents[2]
FAST = "max_retries=0,timeout=10,concurrency=2"
# (trace, answer, finish): each trace says a wrong "#### N" before the final answer; the third is cut
TABLE = {"Janet has 16 eggs, eats 3 and bakes 4. How many are left?":
         ("16 - 3 = 13, so #### 13? No, she also bakes 4: 13 - 4 = 9.", "She has 9 left. #### 9", "stop"),
         "What is 6 * 7?": ("6 * 7 is #### 36... no, 6 * 7 = 42.", "#### 42", "stop"),
         "What is 100 / 4?": ("100 / 4: #### 20 hmm, 4 * 25 = 100 so it is", None, "length")}
GOLD = {"Janet has 16 eggs, eats 3 and bakes 4. How many are left?": 9, "What is 6 * 7?": 42,
        "What is 100 / 4?": 25}


evalkit = partial(evalkit_cli, unset=("OPENAI_API_KEY",), timeout=120)


@pytest.fixture
def gsm(tmp_path) -> Path:
    d = tmp_path / "gsm"
    d.mkdir()
    train = [{"question": f"Train question {i}?", "answer": f"Worked answer {i}. #### {i}"} for i in range(5)]
    (d / "train.jsonl").write_text("".join(json.dumps(x) + "\n" for x in train))
    (d / "test.jsonl").write_text("".join(json.dumps({"question": q, "answer": f"... #### {a}"}) + "\n"
                                          for q, a in GOLD.items()))
    return d


def run(srv, gsm, out, *extra, model=MODEL, model_args=FAST, chat=True):
    r = evalkit("run", "--model", f"openai:{model}", "--base-url", srv.base_url, "--model-args", model_args,
                "--tasks", "gsm8k", "--data", f"gsm8k={gsm}", "--cache-dir", str(out / "cache"),
                "--output", str(out / "results"), *(["--apply-chat-template"] if chat else []), *extra)
    return r


def last_record(out: Path) -> tuple[dict, list]:
    path = sorted((out / "results").glob("*/run.json"), key=lambda p: p.stat().st_mtime)[-1]
    rows = [json.loads(x) for x in (path.parent / "samples_gsm8k.jsonl").read_text().splitlines()]
    return json.loads(path.read_text()), rows


@pytest.mark.parametrize("form", ["markers", "field"])
def test_gsm8k_traces_with_wrong_answers_inside(form, gsm, tmp_path):
    with ReasoningServer(TABLE, form=form) as srv:
        r = run(srv, gsm, tmp_path)
        assert r.returncode == 0, r.stderr
        rec, rows = last_record(tmp_path)
        task = rec["tasks"]["gsm8k"]
        assert task["metrics"]["exact_match_strict"]["value"] == pytest.approx(2 / 3)
        b = task["budget"]
        assert b["hit_token_limit"] == pytest.approx(1 / 3) and b["unclosed_trace"] == pytest.approx(1 / 3)
        assert b["no_answer"] == pytest.approx(1 / 3) and b["with_trace"] == 1.0
        assert b["token_source"] == "usage" and b["usage"]["reasoning_tokens"] > 0
        assert "warning: gsm8k:" in r.stderr and "max_tokens" in r.stderr and "never closed" in r.stderr
        assert "token usage:" in r.stdout and "Traceback" not in r.stderr
        cut = next(x for x in rows if x["extra"]["thinking"]["status"] == "unclosed")
        assert cut["responses"] == [""] and cut["metrics"]["exact_match_strict"] == 0.0
        assert "#### 20" in cut["extra"]["thinking"]["trace"]
        first = next(x for x in rows if "16 eggs" in json.dumps(x["prompt"]))
        assert "#### 13" in first["extra"]["thinking"]["trace"] and first["responses"] == ["She has 9 left. #### 9"]
        assert first["extra"]["usage"]["reasoning_tokens"] == len(TABLE[list(TABLE)[0]][0].split())
        served = len(srv.bodies)
        # a cached rerun: nothing sent, the same figures
        again = run(srv, gsm, tmp_path)
        assert again.returncode == 0 and len(srv.bodies) == served
        rec2, _ = last_record(tmp_path)
        assert rec2["tasks"]["gsm8k"]["budget"] == b and rec2["engine"].get("computed", 0) == 0
        if form == "markers":  # --keep-thinking: the old behaviour, the first #### in the trace is scored
            kept = run(srv, gsm, tmp_path, "--keep-thinking")
            assert kept.returncode == 0, kept.stderr
            rec3, rows3 = last_record(tmp_path)
            assert rec3["tasks"]["gsm8k"]["metrics"]["exact_match_strict"]["value"] == 0.0
            assert rec3["config"]["thinking"] == {"keep_thinking": True}
            shares = lambda x: {k: v for k, v in x.items() if k not in ("split", "warnings")}  # noqa: E731
            assert shares(rec3["tasks"]["gsm8k"]["budget"]) == shares(b) and len(srv.bodies) == served  # scores moved


def test_newer_reasoning_field_name_and_completions_endpoint(gsm, tmp_path):
    with ReasoningServer(TABLE, form="field", field_name="reasoning") as srv:
        r = run(srv, gsm, tmp_path)
        assert r.returncode == 0, r.stderr
        rec, _ = last_record(tmp_path)
        assert rec["tasks"]["gsm8k"]["metrics"]["exact_match_strict"]["value"] == pytest.approx(2 / 3)
    with ReasoningServer(TABLE, form="markers") as srv:  # /v1/completions, text with markers
        r = run(srv, gsm, tmp_path / "plain", chat=False)
        assert r.returncode == 0, r.stderr
        assert all("prompt" in b for b in srv.bodies)
        rec, _ = last_record(tmp_path / "plain")
        assert rec["tasks"]["gsm8k"]["metrics"]["exact_match_strict"]["value"] == pytest.approx(2 / 3)


def test_chat_template_kwargs_reach_the_body_and_key_the_cache(gsm, tmp_path):
    with ReasoningServer(TABLE) as srv:
        r = run(srv, gsm, tmp_path, "--chat-template-kwargs", '{"enable_thinking": false}')
        assert r.returncode == 0, r.stderr
        assert srv.bodies and all(b["chat_template_kwargs"] == {"enable_thinking": False} for b in srv.bodies)
        rec, _ = last_record(tmp_path)
        assert rec["model"]["identity"]["chat_template_kwargs"] == {"enable_thinking": False}
        n = len(srv.bodies)
        other = run(srv, gsm, tmp_path, "--chat-template-kwargs", '{"enable_thinking": true}')
        assert other.returncode == 0 and len(srv.bodies) == n + 3  # another identity: not served from cache
        plain = run(srv, gsm, tmp_path)
        assert plain.returncode == 0 and len(srv.bodies) == n + 6
        assert "chat_template_kwargs" not in srv.bodies[-1]
        bad = run(srv, gsm, tmp_path, "--chat-template-kwargs", "{enable_thinking: false}")
        assert bad.returncode == 2 and "--chat-template-kwargs" in bad.stderr and "Traceback" not in bad.stderr


def test_api_reasoning_model_parameters(gsm, tmp_path):
    with ReasoningServer(TABLE, refuse_sampling=True, model="o3-mini") as srv:
        r = run(srv, gsm, tmp_path, "--gen-kwargs", "max_tokens=2048", model="o3-mini",
                model_args=FAST + ",reasoning_effort=low")
        assert r.returncode == 0, r.stderr
        body = srv.bodies[0]
        assert body["max_completion_tokens"] == 2048 and body["reasoning_effort"] == "low"
        assert not {"max_tokens", "temperature", "top_p"} & set(body)
        rec, _ = last_record(tmp_path)
        assert rec["model"]["identity"]["reasoning_effort"] == "low"
        # told it is not a reasoning model: the server refuses, one clean line
        bad = run(srv, gsm, tmp_path / "b", model="o3-mini", model_args=FAST + ",reasoning_model=false")
        assert bad.returncode == 2 and "max_completion_tokens" in bad.stderr and "Traceback" not in bad.stderr
        wrong = run(srv, gsm, tmp_path / "c", model="o3-mini", model_args=FAST + ",reasoning_effort=huge")
        assert wrong.returncode == 2 and "reasoning_effort" in wrong.stderr and "Traceback" not in wrong.stderr


def test_reasoning_preset_raises_the_budget(gsm, tmp_path):
    with ReasoningServer(TABLE) as srv:
        r = run(srv, gsm, tmp_path, "--reasoning", "--thinking-budget", "4096")
        assert r.returncode == 0, r.stderr
        assert srv.bodies[0]["max_tokens"] == 4096 and srv.bodies[0]["temperature"] == 0.0
        rec, _ = last_record(tmp_path)
        assert rec["config"]["gen_overrides"] == {"max_tokens": 4096, "temperature": 0.0}
        r2 = run(srv, gsm, tmp_path, "--reasoning", "--gen-kwargs", "max_tokens=100")
        assert r2.returncode == 0 and srv.bodies[-1]["max_tokens"] == 100  # --gen-kwargs win
