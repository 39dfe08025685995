"""gpt-oss through an OpenAI-compatible server that returns the raw harmony transcript in ``content``
(a server without a reasoning parser): `evalkit run` on GSM8K scores only the ``final`` channel, keeps
analysis as the trace, counts a transcript without a final channel as unfinished, and sends
``--reasoning-effort`` as the ``reasoning_effort`` field."""
from __future__ import annotations

import json
from functools import partial

import pytest
from conftest import evalkit_cli

from tests._reasoning_server import MODEL, ReasoningServer

pytestmark = [pytest.mark.server]

# (analysis, final, finish): each analysis says a wrong "#### N" first; the third never reaches final
TABLE = {"Janet has 16 eggs, eats 3 and bakes 4. How many are left?":
         ("16 - 3 = 13, so #### 13? No, she also bakes 4: 13 - 4 = 9.", "She has 9 left. #### 9", "stop"),
         "What is 6 * 7?": ("6 * 7 is #### 36... no, 6 * 7 = 42.", "#### 42", "stop"),
         "What is 100 / 4?": ("100 / 4: #### 20 hmm, 4 * 25 = 100 so it is", None, "length")}
GOLD = {"Janet has 16 eggs, eats 3 and bakes 4. How many are left?": 9, "What is 6 * 7?": 42,
        "What is 100 / 4?": 25}
evalkit = partial(evalkit_cli, unset=("OPENAI_API_KEY",), timeout=120)


class HarmonyServer(ReasoningServer):
    """Replies with gpt-oss's raw output: ``<|channel|>analysis<|message|>...<|end|><|start|>assistant
    <|channel|>final<|message|>...`` in ``content`` (a cut reply stops inside analysis)."""

    def reply(self, body: dict) -> dict:
        out = super().reply(body)
        prompt = body["messages"][-1]["content"]
        trace, answer, finish = self._entry(prompt)
        text = f"<|channel|>analysis<|message|>{trace}"
        if answer is not None:
            text += f"<|end|><|start|>assistant<|channel|>final<|message|>{answer}<|return|>"
        out["choices"] = [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}]
        return out


def test_gsm8k_scores_only_the_final_channel(tmp_path):
    d = tmp_path / "gsm"
    d.mkdir()
    (d / "train.jsonl").write_text(json.dumps({"question": "Train?", "answer": "#### 1"}) + "\n")
    (d / "test.jsonl").write_text("".join(json.dumps({"question": q, "answer": f"... #### {a}"}) + "\n"
                                          for q, a in GOLD.items()))
    with HarmonyServer(TABLE) as srv:
        r = evalkit("run", "--model", f"openai:{MODEL}", "--base-url", srv.base_url, "--model-args",
                    "max_retries=0,timeout=10,concurrency=2", "--tasks", "gsm8k", "--data", f"gsm8k={d}",
                    "--cache-dir", str(tmp_path / "cache"), "--output", str(tmp_path / "results"),
                    "--apply-chat-template", "--num-fewshot", "0", "--reasoning-effort", "low")
        assert r.returncode == 0, r.stderr
        assert srv.bodies and all(b["reasoning_effort"] == "low" for b in srv.bodies)
    path = next((tmp_path / "results").glob("*/run.json"))
    rec = json.loads(path.read_text())
    rows = [json.loads(x) for x in (path.parent / "samples_gsm8k.jsonl").read_text().splitlines()]
    assert rec["model"]["identity"]["reasoning_effort"] == "low"
    task = rec["tasks"]["gsm8k"]
    assert task["metrics"]["exact_match_strict"]["value"] == pytest.approx(2 / 3)
    assert task["budget"]["unclosed_trace"] == pytest.approx(1 / 3)
    by_q = {next(q for q in GOLD if q in json.dumps(x["prompt"])): x for x in rows}
    first = by_q["Janet has 16 eggs, eats 3 and bakes 4. How many are left?"]
    assert first["responses"] == ["She has 9 left. #### 9"] and first["metrics"]["exact_match_strict"] == 1.0
    assert first["extra"]["thinking"]["source"] == "harmony" and "#### 13" in first["extra"]["thinking"]["trace"]
    cut = by_q["What is 100 / 4?"]
    assert cut["extra"]["thinking"]["status"] == "unclosed" and cut["responses"] == [""]
    assert "no final channel" in cut["extra"]["thinking"]["notes"] and cut["metrics"]["exact_match_strict"] == 0.0
