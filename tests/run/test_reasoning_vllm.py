"""Reasoning traces through real vLLM on the bundled model: `vllm serve` with a reasoning parser
(deepseek_r1) and the thinking chat template (it prefills <think>), read by the openai backend from
the reply's reasoning field; and the offline vllm backend rendering the same template from
--model-args chat_template=. Lean: 2 GSM8K questions, 12 new tokens, so every trace is cut.

vLLM's reasoning parsers need <think> and </think> to be single tokens, which SmolLM2's tokenizer
lacks: the fixture model is the bundled one (same weights, linked) with two of its unused special
tokens (<issue_start>, <issue_comment>) renamed <think> and </think>."""
from __future__ import annotations

from functools import partial

import json
from pathlib import Path

import pytest

from conftest import evalkit_cli

pytest.importorskip("vllm")

from tests.backends.test_openai_backend import KEY, KEY_ENV, SERVED, VLLMServer  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.vllm, pytest.mark.server]
REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "tests" / "fixtures" / "chat_templates" / "chatml_think.jinja"


def thinking_tokenizer_dir(base: str, out: Path) -> str:
    out.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "generation_config.json", "model.safetensors", "tokenizer_config.json"):
        if not (out / name).exists():
            (out / name).symlink_to(Path(base) / name)
    tok = json.loads((Path(base) / "tokenizer.json").read_text())
    renames = {"<issue_start>": "<think>", "<issue_comment>": "</think>"}
    for a in tok["added_tokens"]:
        if a["content"] in renames:
            a["content"], a["special"] = renames[a["content"]], False  # kept in decoded text
    vocab = tok["model"]["vocab"]
    for old, new in renames.items():
        vocab[new] = vocab.pop(old)
    (out / "tokenizer.json").write_text(json.dumps(tok))
    (out / "chat_template.jinja").write_text(TEMPLATE.read_text())
    return str(out)


@pytest.fixture(scope="module")
def thinking_model(tiny_model_dir, tmp_path_factory) -> str:
    return thinking_tokenizer_dir(tiny_model_dir, tmp_path_factory.mktemp("thinking_model"))


class ReasoningVLLMServer(VLLMServer):
    def command(self) -> list[str]:
        return super().command() + ["--reasoning-parser", "deepseek_r1", "--chat-template", str(TEMPLATE)]


evalkit = partial(evalkit_cli, env={KEY_ENV: KEY, "VLLM_CPU_KVCACHE_SPACE": "1"}, timeout=500)


def record(out: Path) -> tuple[dict, list]:
    path = next((out / "results").glob("*/run.json"))
    rows = [json.loads(x) for x in (path.parent / "samples_gsm8k.jsonl").read_text().splitlines()]
    return json.loads(path.read_text()), rows


COMMON = ["--tasks", "gsm8k", "--num-fewshot", "0", "--limit", "2", "--apply-chat-template",
          "--gen-kwargs", "max_tokens=12"]


def test_vllm_serve_reasoning_parser(thinking_model, shared_data, tmp_path):
    srv = ReasoningVLLMServer(thinking_model, tmp_path / "server.log")
    srv.start()
    try:
        r = evalkit("run", "--model", f"openai:{SERVED}", "--base-url", srv.base_url, *COMMON,
                    "--data", f"gsm8k={shared_data / 'gsm8k'}", "--model-args", f"api_key_env={KEY_ENV}",
                    "--cache-dir", str(tmp_path / "cache"), "--output", str(tmp_path / "results"))
    finally:
        srv.kill()
    assert r.returncode == 0, r.stderr
    rec, rows = record(tmp_path)
    b = rec["tasks"]["gsm8k"]["budget"]
    # the parser found no </think>: everything is reasoning, the answer field null (one reply is the
    # model stopping at once: an empty trace that never ended either)
    assert b["unclosed_trace"] == 1.0 and b["no_answer"] == 1.0 and b["with_trace"] == 1.0
    assert 0 < b["usage"]["completion_tokens"] <= 24 and b["usage"]["prompt_tokens"] > 0
    for row in rows:
        t = row["extra"]["thinking"]
        assert t["source"] == "field" and t["status"] == "unclosed" and row["responses"] == [""]
        assert any("no answer field" in n for n in t["notes"])
        if t["trace"]:
            assert t["token_source"] == "tokenizer" and t["trace_tokens"] > 0  # vLLM reports 0 reasoning tokens


def test_vllm_offline_chat_template(tiny_model_dir, shared_data, tmp_path):
    r = evalkit("run", "--model", f"vllm:{tiny_model_dir}", *COMMON, "--data", f"gsm8k={shared_data / 'gsm8k'}",
                "--model-args", f"chat_template={TEMPLATE},max_model_len=2048",
                "--cache-dir", str(tmp_path / "cache"), "--output", str(tmp_path / "results"))
    assert r.returncode == 0, r.stderr
    rec, rows = record(tmp_path)
    assert rec["model"]["identity"]["chat_template_sha256"]
    b = rec["tasks"]["gsm8k"]["budget"]
    assert b["unclosed_trace"] == 1.0 and b["no_answer"] == 1.0
    assert all(row["extra"]["thinking"]["status"] == "unclosed" and row["responses"] == [""] for row in rows)
