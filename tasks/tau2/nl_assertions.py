"""τ²-bench's natural-language assertions, judged by the run's judge model (``--judge``), as its
``NLAssertionsEvaluator`` (``tau2/evaluator/evaluator_nl_assertions.py``) judges them: the whole
trajectory as ``role: content`` lines (tool calls appear as ``assistant: None``, tool results as
``tool: ...``), the task's assertions as a Python list, τ²-bench's system prompt asking for JSON
``{"results": [{"expectedOutcome", "reasoning", "metExpectation"}]}``, greedy; a trial meets its
assertions when every result the judge returns is met (τ²-bench's ``all``, so an empty ``results``
list passes, as there). Differences: evalkit reads the JSON object out of a code fence or surrounding
text where τ²-bench would fail on anything but bare JSON, and a reply with no readable object
counts as not met and is recorded (``status: "unparsed"``); prompts are byte for byte τ²-bench's.
"""
from __future__ import annotations

import json
import re
from typing import Optional

from evalkit.taskapi.agent import Transcript
from evalkit.taskapi.requests import GenerateRequest, GenParams

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


def request(task: dict, t: Transcript, max_tokens: int = MAX_TOKENS) -> Optional[GenerateRequest]:
    """The judge request of one trial (None when the task has no assertions)."""
    nl = assertions_of(task)
    if not nl:
        return None
    user = USER.format(trajectory=trajectory_text(t), assertions=nl)
    return GenerateRequest(messages=(("system", SYSTEM), ("user", user)),
                           params=GenParams(max_tokens=int(max_tokens), temperature=0.0))


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
