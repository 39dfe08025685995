"""Agent episodes on the bundled model (SmolLM2-135M-Instruct) through transformers and the vLLM
offline engine: its chat template ignores tools, so evalkit renders them in the Hermes ChatML format;
each reply is parsed (vLLM's own ``hermes`` parser on the vLLM backend); transcripts are complete and a
rerun comes from the cache. The model is too small to use the tools: the transcripts are what is checked."""
from __future__ import annotations

import pytest

import _bank  # noqa: F401 (registers agent_bank_test)
import evalkit
from evalkit.taskapi import tool_parsers

pytestmark = [pytest.mark.slow]
TASK = "agent_bank_test"


def play(backend, cache_dir):
    return evalkit.evaluate(model=backend, tasks=[TASK], output=None, cache_dir=str(cache_dir),
                            task_args={TASK: {"fewshot": True, "max_tokens": 24, "max_steps": 2}})


def check_transcripts(run):
    for row in run.samples[TASK]:
        t = row["responses"][0]
        turns, msgs = t["turns"], t["messages"]
        assert t["stop_reason"] in ("done", "max_steps") and len(t["snapshots"]) == len(t["responses"])
        for turn in turns:
            assert turn["prompt_tokens"] > 300  # the tool schemas are in the prompt
            assert 0 < turn["completion_tokens"] <= 24
            parsed = tool_parsers.parse("hermes", turn["text"], _bank.TOOLS)
            assert [{k: c[k] for k in ("name", "arguments")} for c in turn["tool_calls"]] == parsed.calls
        example = sum(m["role"] == "assistant" for m in _bank.EXAMPLE)
        assert sum(m["role"] == "assistant" for m in msgs) == len(turns) + example
        assert row["metrics"]["turns"] == len(turns)


def plays_and_replays(backend, tmp_path):
    first = play(backend, tmp_path / "cache")
    check_transcripts(first)
    assert backend.run_stats()["tool_template_fallback"] == 1
    again = play(backend, tmp_path / "cache")
    assert again.engine.get("computed", 0) == 0 and again.engine["cached"] == first.engine["computed"]
    assert [[x["text"] for x in r["responses"][0]["turns"]] for r in again.samples[TASK]] == \
        [[x["text"] for x in r["responses"][0]["turns"]] for r in first.samples[TASK]]


def test_the_bundled_model_plays_episodes_through_transformers(hf_backend, tmp_path):
    plays_and_replays(hf_backend, tmp_path)


def test_the_bundled_model_plays_episodes_through_vllm_offline(vllm_backend, tmp_path):
    """(in the session engine's worker group: the fixture is named in the signature)"""
    plays_and_replays(vllm_backend, tmp_path)


def test_the_docs_agent_task_runs_on_the_bundled_model(tiny_model_dir, capsys):
    import re
    from conftest import REPO
    text = (REPO / "docs" / "agents-and-tools.md").read_text(encoding="utf-8")
    section = text[text.index("### A minimal agent task"):text.index("### BFCL v4")]
    (code,) = [b for b in re.findall(r"```py(?:thon)?\n(.*?)```", section, re.S) if "AgentTask" in b]
    exec(compile(code, "docs/agents-and-tools.md", "exec"), {"__name__": "readme_agent_example"})
    printed = capsys.readouterr().out
    assert printed.split(" ", 1)[0] in ("0.0", "0.5", "1.0", "1.5", "2.0") and "'user_turn': 0" in printed
