"""Agent transcripts (a sample's response in agent tasks: BFCL multi-turn, τ²-bench, ...) as a
conversation to read: who spoke (system, user, agent, tool), what was said, each tool call with
its arguments and each result or error. Pure data shaping: no Streamlit, no engine."""
from __future__ import annotations

import json
from typing import Optional

ROLES = {"system": "system", "user": "user", "assistant": "agent", "tool": "tool"}
MAX_CHARS = 4000


def is_transcript(x) -> bool:
    return isinstance(x, dict) and isinstance(x.get("messages"), list) and isinstance(x.get("turns"), list)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS] + f"… ({len(text) - MAX_CHARS} more characters)"


def _call_text(call: dict) -> str:
    fn = call.get("function") or call
    args = fn.get("arguments")
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            pass
    shown = json.dumps(args, ensure_ascii=False) if not isinstance(args, str) else args
    return f"{fn.get('name')}({shown})"


def conversation(transcript: dict) -> list[dict]:
    """``[{role, text, calls}]``: every message in order; ``calls`` lists a message's tool calls as
    ``name({args})``; a tool message says which call it answers; the results of the simulated user's
    own tool calls (τ²-bench telecom's phone) are the ``user's tool``."""
    out = []
    for m in transcript.get("messages") or []:
        if not isinstance(m, dict):
            continue
        role = ROLES.get(m.get("role"), str(m.get("role")))
        content = m.get("content")
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False) if content else ""
        calls = [_call_text(c) for c in m.get("tool_calls") or [] if isinstance(c, dict)]
        if m.get("requestor") == "user" and role in ("user", "tool"):  # the customer's own device (τ²-bench telecom)
            role = "user" if role == "user" else "user's tool"
        if role in ("tool", "user's tool") and m.get("name"):
            text = f"{m['name']} → {text}"
        out.append({"role": role, "text": _clip(text), "calls": calls})
    return out


def summary(transcript: dict) -> Optional[str]:
    """One line: how the conversation ended and what it took."""
    if not is_transcript(transcript):
        return None
    calls = sum(len(t.get("tool_calls") or []) for t in transcript["turns"])
    users = len(transcript.get("user_replies") or [])
    user_calls = sum(len(m.get("tool_calls") or []) for m in transcript.get("messages") or []
                     if isinstance(m, dict) and m.get("requestor") == "user")
    parts = [f"ended: {transcript.get('stop_reason', '?')}", f"{len(transcript['turns'])} agent turns",
             f"{calls} tool calls"]
    if users:
        parts.append(f"{users} simulated-user messages")
    if user_calls:
        parts.append(f"{user_calls} user tool calls")
    return " · ".join(parts)
