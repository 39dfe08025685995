"""The agent loop: plays every ``Episode`` of a run, all episodes' next model turns in one engine batch.

Each round asks the engine for one model turn of every episode still going (``ToolChatRequest``s:
deduped, cached, so a killed run resumes at the turn it reached and a rerun replays finished turns
from the cache), then runs the calls each reply makes in the sandbox (``evalkit.sandbox.tools``;
episodes in parallel, an episode's calls in order, its state carried between them). A call to a
function the episode does not offer, or with arguments that are not a JSON object, is not run: the
model gets the error back. A reply without calls ends the user turn; the next one comes, until the
last. An episode also ends at ``max_steps`` model turns within one user turn, at its token or time
budget. Tool ids are ``call_<turn>_<k>``, so transcripts are the same on every rerun.
"""
from __future__ import annotations

import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

from evalkit.taskapi.agent import Episode, Transcript, canonical_json
from evalkit.taskapi.requests import ToolChatRequest

log = logging.getLogger(__name__)


class _Play:
    """One episode in progress."""

    def __init__(self, ep: Episode):
        self.ep = ep
        self.t = Transcript(messages=ep.opening() + ep.turn_messages(0))
        self.user_turn = 0
        self.steps = 0       # model turns in this user turn
        self.state: Optional[str] = None
        self.done = False
        self.t0 = time.monotonic()
        self.offered = {t["function"]["name"] if "function" in t else t.get("name") for t in ep.tools_at(0)}

    def request(self) -> ToolChatRequest:
        tools = canonical_json(self.ep.tools_at(self.user_turn)) if self.ep.tool_mode == "native" else "[]"
        return ToolChatRequest(canonical_json(self.t.messages), tools, self.ep.params, self.ep.parser)

    def take(self, comp, seconds: float) -> list[dict]:
        """The reply goes into the transcript; returns the calls to run (with their ids)."""
        calls = [dict(c, id=f"call_{len(self.t.turns)}_{k}") for k, c in enumerate(comp.tool_calls or [])]
        usage = comp.usage or {}
        turn = {"user_turn": self.user_turn, "text": comp.text, "tool_calls": [], "results": [],
                "finish_reason": comp.finish_reason, "parse_error": comp.tool_error,
                "prompt_tokens": usage.get("prompt_tokens"), "completion_tokens": usage.get("completion_tokens"),
                "model_seconds": round(seconds, 3)}
        self.t.turns.append(turn)
        self.t.tokens += int(usage.get("completion_tokens") or 0)
        if self.ep.tool_mode == "native":
            msg = {"role": "assistant", "content": comp.content if comp.content is not None else comp.text}
            if calls:
                msg["tool_calls"] = [{"id": c["id"], "type": "function", "function": {
                    "name": c["name"], "arguments": c.get("raw_arguments") if "raw_arguments" in c
                    else json.dumps(c["arguments"], ensure_ascii=False)}} for c in calls]
        else:
            msg = {"role": "assistant", "content": comp.text}
        self.t.messages.append(msg)
        self.steps += 1
        return calls

    def problem_of(self, call: dict) -> Optional[str]:
        if call["name"] not in self.offered:
            return f"unknown function {call['name']!r}: not among the tools offered"
        if "raw_arguments" in call:
            return "the arguments are not a JSON object"
        return None

    def record(self, call: dict, result: Optional[str], error: Optional[str], seconds: float) -> None:
        turn = self.t.turns[-1]
        turn["tool_calls"].append({k: call[k] for k in ("id", "name", "arguments", "raw_arguments") if k in call})
        turn["results"].append({"error": error} if error is not None else {"result": result})
        turn["tool_seconds"] = round(turn.get("tool_seconds", 0.0) + seconds, 3)
        msg = {"role": "tool", "content": result if error is None else f"Error: {error}", "name": call["name"]}
        if self.ep.tool_mode == "native":
            msg["tool_call_id"] = call["id"]
        self.t.messages.append(msg)

    def end_turn(self, reason: Optional[str], snapshot) -> None:
        """After a reply without calls (``reason`` None) or when a limit ends the episode."""
        last = self.t.turns[-1] if self.t.turns else None
        self.t.responses.append(last["text"] if last and not last["tool_calls"] else "")
        self.t.snapshots.append(snapshot)
        if reason is not None or self.user_turn + 1 >= len(self.ep.user_turns):
            self.done, self.t.stop_reason = True, reason or "done"
            self.t.seconds = time.monotonic() - self.t0
            return
        self.user_turn += 1
        self.steps = 0
        self.t.messages.extend(self.ep.turn_messages(self.user_turn))
        self.offered |= {t["function"]["name"] if "function" in t else t.get("name")
                         for t in self.ep.tools_at(self.user_turn)}

    def limit_reached(self) -> Optional[str]:
        if self.steps >= self.ep.max_steps:
            return "max_steps"
        if self.ep.max_tokens_total is not None and self.t.tokens >= self.ep.max_tokens_total:
            return "max_tokens_total"
        if self.ep.max_seconds is not None and time.monotonic() - self.t0 >= self.ep.max_seconds:
            return "max_seconds"
        return None


def play(episodes, engine, tools=None, workers: int = 2) -> dict:
    """{episode key: Transcript} for every episode; ``engine`` answers model turns (``Engine.run``),
    ``tools`` (a ``ToolSandbox``) runs the calls of episodes that have an environment."""
    plays = {}
    for ep in episodes:
        plays.setdefault(ep.key(), _Play(ep))
    with ThreadPoolExecutor(max(1, workers)) as pool:
        list(pool.map(lambda p: _start(p, tools), [p for p in plays.values() if p.ep.env is not None]))
        active = list(plays.values())
        rounds = 0
        while active:
            rounds += 1
            reqs = [p.request() for p in active]
            t0 = time.monotonic()
            answers = engine.run(reqs)
            seconds = (time.monotonic() - t0) / max(1, len(reqs))
            todo = [(p, p.take(answers[r.key()][0], seconds)) for p, r in zip(active, reqs)]
            list(pool.map(lambda pc: _run_calls(pc[0], pc[1], tools), todo))
            active = [p for p in active if not p.done]
            log.info("agent loop: round %d, %d of %d episodes still going", rounds, len(active), len(plays))
    return {k: p.t for k, p in plays.items()}


def _start(p: _Play, tools) -> None:
    if tools is None:
        raise RuntimeError(f"episode with tool environment {p.ep.env.name!r} needs a tool sandbox")
    p.state = tools.start(p.ep.env).state


def _snapshot(p: _Play, tools):
    return tools.snapshot(p.ep.env, p.state) if p.ep.env is not None else None


def _run_calls(p: _Play, calls: list, tools) -> None:
    for call in calls:
        why = p.problem_of(call)
        if why is not None or p.ep.env is None:
            p.record(call, None, why or "no tool environment", 0.0)
            continue
        out = tools.call(p.ep.env, p.state, call["name"], call["arguments"])
        p.state = out.state
        p.record(call, out.result, out.error, out.seconds)
    if not calls:
        p.end_turn(None, _snapshot(p, tools))
    else:
        reason = p.limit_reached()
        if reason:
            p.end_turn(reason, _snapshot(p, tools))


def play_with_sandbox(episodes, engine, workers: int = 2) -> dict:
    """``play`` with a tool sandbox opened for the episodes that have an environment, then closed;
    the sandbox's isolation layer is counted in the engine's stats."""
    if not any(ep.env is not None for ep in episodes):
        return play(episodes, engine)
    from evalkit.sandbox.tools import ToolSandbox
    with ToolSandbox(workers=workers) as tools:
        return play(episodes, engine, tools, workers)
