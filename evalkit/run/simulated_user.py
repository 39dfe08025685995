"""The simulated user's side of an agent episode (``Episode.user_sim``), as τ²-bench's
``UserSimulator`` plays it (``tau2/user/user_simulator.py``, ``UserState.flip_roles``).

The user model reads the conversation with the roles flipped: the agent's text messages become
``user`` messages, its own earlier messages ``assistant`` ones; the agent's tool calls and their
results are not shown (τ²-bench routes them to the environment, never to the user). Its system
prompt is the task's (τ²-bench: the simulation guidelines and the ``<scenario>``). A reply holding a
stop token ends the conversation; an empty reply is a user error (τ²-bench's ``USER_ERROR``).
"""
from __future__ import annotations

from typing import Optional

from evalkit.taskapi.agent import UserSim, canonical_json
from evalkit.taskapi.requests import ToolChatRequest


def flipped(conversation: list[dict]) -> list[dict]:
    """The agent-side messages after the opening, as the user model reads them."""
    out = []
    for m in conversation:
        if m["role"] == "user":
            out.append({"role": "assistant", "content": m.get("content") or ""})
        elif m["role"] == "assistant" and not m.get("tool_calls"):
            out.append({"role": "user", "content": m.get("content") or ""})
    return out


def user_request(sim: UserSim, conversation: list[dict]) -> ToolChatRequest:
    """The user model's next turn: its system prompt and the flipped conversation; no tools."""
    messages = [{"role": "system", "content": sim.system_prompt}] + flipped(conversation)
    return ToolChatRequest(canonical_json(messages), "[]", sim.params, None)


def reply_text(comp) -> str:
    """What the user said (without a reasoning trace where the backend split one off)."""
    text = comp.content if getattr(comp, "content", None) is not None else comp.text
    return (text or "").strip()


def stop_reason(sim: UserSim, text: str) -> Optional[str]:
    """``user_stop`` when the user ended the conversation, ``user_error`` for an empty reply, else None."""
    if any(tok in text for tok in sim.stop_tokens):
        return "user_stop"
    if not text:
        return "user_error"
    return None
