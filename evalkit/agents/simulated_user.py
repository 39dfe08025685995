"""The simulated user's side of an agent episode (``Episode.user_sim``), as τ²-bench's
``UserSimulator`` plays it (``tau2/user/user_simulator.py``, ``UserState.flip_roles``).

The user model reads the conversation with the roles flipped: the agent's text messages become
``user`` messages, its own earlier messages ``assistant`` ones; the agent's tool calls and their
results are not shown (τ²-bench routes them to the environment, never to the user). A user with
tools (``UserSim.tools``) sees its own calls (as its ``assistant`` messages) and their results, which
the agent never sees. Its system prompt is the task's (τ²-bench: the simulation guidelines and the
``<scenario>``). A reply holding a stop token ends the conversation, unless it is a tool call (as
τ²-bench's ``is_stop``); an empty reply is a user error (τ²-bench's ``USER_ERROR``).
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
            out.append({"role": "assistant", "content": m.get("content") or "",
                        **({"tool_calls": m["tool_calls"]} if m.get("tool_calls") else {})})
        elif m["role"] == "assistant" and not m.get("tool_calls"):
            out.append({"role": "user", "content": m.get("content") or ""})
        elif m["role"] == "tool" and m.get("requestor") == "user":  # the user's own tool results
            out.append({k: v for k, v in m.items() if k != "requestor"})
    return out


def user_request(sim: UserSim, conversation: list[dict]) -> ToolChatRequest:
    """The user model's next turn: its system prompt and the flipped conversation; its tools, if any."""
    messages = [{"role": "system", "content": sim.system_prompt}] + flipped(conversation)
    return ToolChatRequest(canonical_json(messages), sim.tools, sim.params, sim.parser if sim.tools != "[]" else None)


def user_calls(sim: UserSim, comp, n: int) -> list[dict]:
    """The tool calls in the user's reply (none when it has no tools), ids ``user_<n>_<k>``."""
    if sim.tools == "[]":
        return []
    return [dict(c, id=f"user_{n}_{k}") for k, c in enumerate(comp.tool_calls or [])]


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
