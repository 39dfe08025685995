"""τ²-bench's natural-language assertions, judged by the run's judge model (``--judge``), as its
``NLAssertionsEvaluator`` (``tau2/evaluator/evaluator_nl_assertions.py``) judges them: the whole
trajectory as ``role: content`` lines (tool calls appear as ``assistant: None``, tool results as
``tool: ...``), the task's assertions as a Python list, τ²-bench's system prompt asking for JSON
``{"results": [{"expectedOutcome", "reasoning", "metExpectation"}]}``, greedy; a trial meets its
assertions when every result the judge returns is met (τ²-bench's ``all``, so an empty ``results``
list passes, as there). Differences: evalkit reads the JSON object out of a code fence or surrounding
text where τ²-bench would fail on anything but bare JSON, and a reply with no readable object
counts as not met and is recorded (``status: "unparsed"``); prompts are byte for byte τ²-bench's.

On the shared judge layer (``evalkit.taskapi.judged``) the assertions are ``NLAssertions``, a
reference-guided judged metric (the task's expected outcomes are the reference) that is *optional*: a
run without ``--judge`` scores τ²-bench without it. The task judges each trial's transcript (one ask,
tag ``"nl"``); the record's ``extra.judged.nl_assertions`` and the reliability figures are the layer's.
"""
from __future__ import annotations

import json
import re
from typing import Optional

from evalkit.scoring.metric import Metric
from evalkit.taskapi.agent import Transcript
from evalkit.taskapi.judged import JudgeAsk, JudgedMetric
from evalkit.taskapi.requests import GenerateRequest

SYSTEM = """
        TASK
        - You will be given a list of expected outcomes and a conversation that was collected during a test case run.
        - The conversation is between an agent and a customer.
        - Your job is to evaluate whether the agent satisfies each of the expected outcomes.
        - Grade each expected outcome individually.

        FORMAT
        - Your response should be a JSON object with the following fields:
        - `reasoning`: a short explanation for your classification
        - `metExpectation`: `true` if the agent satisfies the expected outcomes, `false` otherwise
        - `expectedOutcome`: repeat the expectation from the input that you are grading
        
        Example response structure:
        {
            "results": [
                {
                    "expectedOutcome": "<one of the expected outcomes from the input>",
                    "reasoning": "<reasoning trace>",
                    "metExpectation": <false or true>,
                }
            ]
        }
        """

USER = """
        conversation:
        {trajectory}
        
        expectedOutcomes:
        {assertions}
        """

MAX_TOKENS = 2048


def assertions_of(task: dict) -> list:
    return list((task.get("evaluation_criteria") or {}).get("nl_assertions") or [])


def _content(m: dict):
    # τ²-bench's assistant message of a tool call carries no text: its content is None
    return None if m.get("tool_calls") and not m.get("content") else m.get("content")


def trajectory_text(t: Transcript) -> str:
    """τ²-bench's ``"\\n".join(f"{m.role}: {m.content}")`` over the conversation (no system prompt)."""
    return "\n".join(f"{m.get('role')}: {_content(m)}" for m in t.messages if m.get("role") != "system")


def ask(task: dict, t: Transcript, max_tokens: int = MAX_TOKENS) -> Optional[JudgeAsk]:
    """The judge's question about one trial (None when the task has no assertions)."""
    nl = assertions_of(task)
    if not nl:
        return None
    user = USER.format(trajectory=trajectory_text(t), assertions=nl)
    return JudgeAsk("nl", (("system", SYSTEM), ("user", user)), int(max_tokens))


def request(task: dict, t: Transcript, max_tokens: int = MAX_TOKENS) -> Optional[GenerateRequest]:
    """The judge request of one trial (None when the task has no assertions)."""
    a = ask(task, t, max_tokens)
    return a.request() if a is not None else None


def _json_object(text: str) -> Optional[dict]:
    for candidate in [text, *re.findall(r"```(?:json)?\s*(.*?)```", text, flags=re.S)]:
        try:
            got = json.loads(candidate.strip())
            if isinstance(got, dict):
                return got
        except ValueError:
            pass
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        try:
            got = json.loads(text[start:end + 1])
            return got if isinstance(got, dict) else None
        except ValueError:
            return None
    return None


def verdict(reply: str) -> dict:
    """``{"met": bool, "checks": [{assertion, met, justification}], "status": "judged"|"unparsed"}``."""
    data = _json_object(reply or "")
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        return {"met": False, "checks": [], "status": "unparsed"}
    checks = [{"assertion": r.get("expectedOutcome"), "met": r.get("metExpectation") is True,
               "justification": r.get("reasoning")} for r in results]
    return {"met": all(c["met"] for c in checks), "checks": checks, "status": "judged"}


class NLAssertions(JudgedMetric):
    """``nl_assertions``: 1 when the judge finds every expected outcome met in the trial, else 0 (a
    reply with no readable verdict: 0, and a parse failure)."""

    name = "nl_assertions"
    kind = "reference"
    optional = True

    def asks(self, doc, answer) -> list:
        a = ask(doc.meta["task"], answer)
        return [a] if a is not None else []

    def parse(self, ask, text):
        v = verdict(text)
        return v if v["status"] == "judged" else None

    def values(self, doc, answer, verdicts: dict) -> dict:
        if not verdicts:  # the task has no assertions
            return {}
        v = verdicts.get("nl")
        return {self.name: float(bool(v and v["met"]))}

    def extra(self, doc, answer, verdicts: dict) -> dict:
        v = verdicts.get("nl") or {"checks": [], "status": "unparsed"}
        return {"checks": v["checks"], "status": v["status"]} if verdicts else {}

    def declarations(self) -> tuple:
        return (Metric(self.name, required=False),)
