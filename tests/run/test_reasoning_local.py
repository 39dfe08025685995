"""Reasoning traces from the bundled real model on the local backends: a chat template (given as a
file through --model-args chat_template=) that prefills <think> makes SmolLM2 answer inside a trace;
--chat-template-kwargs '{"enable_thinking": false}' reaches the template (an empty trace written
into the prompt), changes the prompt and the cache identity."""
from __future__ import annotations

from functools import partial

import json
from pathlib import Path

import pytest

from conftest import evalkit_cli

REPO = Path(__file__).resolve().parents[2]
# ChatML (SmolLM2's own format) that opens a trace after the assistant header, Qwen3-style:
# enable_thinking=false writes an empty, closed trace instead (docs/backends.md uses the same file)
TEMPLATE_FILE = REPO / "tests" / "fixtures" / "chat_templates" / "chatml_think.jinja"


evalkit = partial(evalkit_cli, timeout=400)


def record(out: Path) -> tuple[dict, list]:
    path = next((out / "results").glob("*/run.json"))
    rows = [json.loads(x) for x in (path.parent / "samples_gsm8k.jsonl").read_text().splitlines()]
    return json.loads(path.read_text()), rows


def test_hf_template_that_prefills_think(tiny_model_dir, shared_data, tmp_path):
    template = TEMPLATE_FILE
    common = ["--model", f"hf:{tiny_model_dir}", "--tasks", "gsm8k", "--data", f"gsm8k={shared_data / 'gsm8k'}",
              "--num-fewshot", "0", "--limit", "2", "--apply-chat-template", "--gen-kwargs", "max_tokens=12",
              "--cache-dir", str(tmp_path / "cache")]
    args = f"chat_template={template}"
    r = evalkit("run", *common, "--model-args", args, "--output", str(tmp_path / "a" / "results"))
    assert r.returncode == 0, r.stderr
    rec, rows = record(tmp_path / "a")
    b = rec["tasks"]["gsm8k"]["budget"]
    # the prompt opened the trace and the model never closed it in 12 tokens: nothing is scored as an answer
    assert b["unclosed_trace"] == 1.0 and b["no_answer"] == 1.0 and b["with_trace"] == 1.0
    assert b["token_source"] == "tokenizer" and 0 < b["mean_trace_tokens"] <= 12
    assert "never closed their reasoning trace" in r.stderr
    for row in rows:
        t = row["extra"]["thinking"]
        assert row["responses"] == [""] and t["status"] == "unclosed" and t["trace"] == t["raw"].strip()
        assert t["raw"].strip(), "the model wrote something"
        assert any("prompt opened the trace" in n for n in t["notes"])
    assert rec["model"]["identity"]["chat_template_sha256"]
    # enable_thinking=false: an empty closed trace in the prompt, the model's text is its answer
    r2 = evalkit("run", *common, "--model-args", args, "--chat-template-kwargs", '{"enable_thinking": false}',
                 "--output", str(tmp_path / "b" / "results"))
    assert r2.returncode == 0, r2.stderr
    rec2, rows2 = record(tmp_path / "b")
    assert rec2["model"]["identity"]["chat_template_kwargs"] == {"enable_thinking": False}
    assert rec2["model"]["identity_hash"] != rec["model"]["identity_hash"]
    assert rec2["engine"].get("computed") == 2  # a different prompt: nothing came from the first run's cache
    assert rec2["tasks"]["gsm8k"]["budget"]["unclosed_trace"] == 0.0
    assert all(row["responses"][0] and "thinking" not in row["extra"] for row in rows2)


def test_hf_backend_renders_with_template_and_kwargs(tiny_model_dir, tmp_path):
    pytest.importorskip("transformers")
    from evalkit.backends.hf import HFBackend
    template = TEMPLATE_FILE
    msgs = [{"role": "user", "content": "What is 2+3?"}]
    think = HFBackend(tiny_model_dir, chat_template=str(template))
    off = HFBackend(tiny_model_dir, chat_template=str(template), chat_template_kwargs={"enable_thinking": False})
    plain = HFBackend(tiny_model_dir)
    assert think.apply_chat_template(msgs).endswith("<|im_start|>assistant\n<think>\n")
    assert off.apply_chat_template(msgs).endswith("<think>\n\n</think>\n\n")
    assert "<think>" not in plain.apply_chat_template(msgs)
    assert "chat_template_kwargs" not in plain.identity() and "chat_template_sha256" not in plain.identity()
    assert len({think.identity_hash(), off.identity_hash(), plain.identity_hash()}) == 3
    with pytest.raises(ValueError, match="no such file"):
        HFBackend(tiny_model_dir, chat_template="missing.jinja")
