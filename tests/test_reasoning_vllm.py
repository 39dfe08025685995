"""Reasoning traces through real vLLM on the bundled model: `vllm serve` with a reasoning parser
(deepseek_r1) and the thinking chat template (it prefills <think>), read by the openai backend from
the reply's reasoning field; and the offline vllm backend rendering the same template from
--model-args chat_template=. Lean: 2 GSM8K questions, 12 new tokens, so every trace is cut."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("vllm")

from tests.test_openai_backend import KEY, KEY_ENV, SERVED, VLLMServer  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.vllm]
REPO = Path(__file__).resolve().parents[1]
TEMPLATE = REPO / "docs" / "chat_templates" / "chatml_think.jinja"


class ReasoningVLLMServer(VLLMServer):
    def command(self) -> list[str]:
        return super().command() + ["--reasoning-parser", "deepseek_r1", "--chat-template", str(TEMPLATE)]


def evalkit(*args, timeout=500):
    env = {**os.environ, "EVALKIT_TORCH_THREADS": "1", "PYTHONPATH": str(REPO), KEY_ENV: KEY,
           "VLLM_CPU_KVCACHE_SPACE": "1"}
    return subprocess.run([sys.executable, "-m", "evalkit", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=str(REPO))


def record(out: Path) -> tuple[dict, list]:
    path = next((out / "results").glob("*/run.json"))
    rows = [json.loads(x) for x in (path.parent / "samples_gsm8k.jsonl").read_text().splitlines()]
    return json.loads(path.read_text()), rows


COMMON = ["--tasks", "gsm8k", "--num-fewshot", "0", "--limit", "2", "--apply-chat-template",
          "--gen-kwargs", "max_tokens=12"]


def test_vllm_serve_reasoning_parser(tiny_model_dir, shared_data, tmp_path):
    srv = ReasoningVLLMServer(tiny_model_dir, tmp_path / "server.log")
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
    assert b["unclosed_trace"] == 1.0 and b["hit_token_limit"] == 1.0 and b["with_trace"] == 1.0
    assert b["usage"]["completion_tokens"] == 24 and b["usage"]["prompt_tokens"] > 0
    for row in rows:
        t = row["extra"]["thinking"]
        assert t["source"] == "field" and t["trace"] and row["responses"] == [""]


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
