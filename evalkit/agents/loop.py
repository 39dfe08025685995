"""The agent loop: plays every ``Episode`` of a run, all episodes' next model turns in one engine batch.

Each round asks the engine for one model turn of every episode still going (``ToolChatRequest``s:
deduped, cached, so a killed run resumes at the turn it reached and a rerun replays finished turns
from the cache), then runs the calls each reply makes in the sandbox (``evalkit.sandbox.tools``;
episodes in parallel, an episode's calls in order, its state carried between them). A call to a
function the episode does not offer, or with arguments that are not a JSON object, is not run: the
model gets the error back. A reply without calls ends the user turn; the next one comes, until the
last. An episode also ends at ``max_steps`` model turns within one user turn, at its token or time
budget. Tool ids are ``call_<turn>_<k>``, so transcripts are the same on every rerun.

An episode with a simulated user (``Episode.user_sim``, τ²-bench's orchestration) opens with the
agent's first message; each round, first every waiting user model answers (one batch on the user
engine, ``evalkit.agents.simulated_user``), then every agent whose turn it is (one batch). The agent
acts until it answers without a call, then the user speaks again; the conversation ends when the
user's message holds a stop token (``user_stop``), at ``max_steps`` messages or ``max_errors``
failed calls, or on an empty message; the environment's snapshot is taken once, at the end. A user
with tools (τ²-bench's dual control) may answer with calls instead: they run in the episode's
environment (``user:<name>``), their results go to the user alone, and it speaks again.
"""
from __future__ import annotations

import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

from evalkit.agents import simulated_user
from evalkit.taskapi.agent import Episode, Transcript, canonical_json
from evalkit.taskapi.requests import ToolChatRequest

log = logging.getLogger(__name__)


class _Play:
    """One episode in progress."""

    def __init__(self, ep: Episode):
        self.ep = ep
        self.sim = ep.user_sim
        if self.sim is None:
            self.t = Transcript(messages=ep.opening() + ep.turn_messages(0))
        else:  # the agent opens, the simulated user answers first
            self.t = Transcript(messages=ep.opening() + [{"role": "assistant", "content": self.sim.first_message}])
        self.n_opening = len(ep.opening())
        self.phase = "agent" if self.sim is None else "user"
        self.user_turn = 0
        self.steps = 0       # model turns in this user turn
        self.messages_sent = 0  # with a simulated user: agent replies, user replies, tool-result batches
        self.failed_calls = 0
        self.calls_made = 0     # the agent's tool calls run so far (max_calls)
        self.state: Optional[str] = None
        self.done = False
        self.t0 = time.monotonic()
        self.offered = {t["function"]["name"] if "function" in t else t.get("name") for t in ep.tools_at(0)}
        self.user_offered = {t["function"]["name"] for t in json.loads(self.sim.tools)} if self.sim else set()
        self.user_calls: list = []  # the simulated user's calls waiting to run

    def request(self) -> ToolChatRequest:
        tools = canonical_json(self.ep.tools_at(self.user_turn)) if self.ep.tool_mode == "native" else "[]"
        seen = [m for m in self.t.messages if m.get("requestor") != "user"]  # not the user's own tool use
        return ToolChatRequest(canonical_json(seen), tools, self.ep.params, self.ep.parser)

    def take(self, comp, seconds: float) -> list[dict]:
        """The reply goes into the transcript; returns the calls to run (with their ids): at most the
        episode's ``max_calls_per_reply``, and ``max_calls`` in all; the rest are cut and counted."""
        asked = list(comp.tool_calls or [])
        room = max(0, min(self.ep.max_calls_per_reply, self.ep.max_calls - self.calls_made))
        calls = [dict(c, id=f"call_{len(self.t.turns)}_{k}") for k, c in enumerate(asked[:room])]
        self.calls_made += len(calls)
        usage = comp.usage or {}
        turn = {"user_turn": self.user_turn, "text": comp.text, "tool_calls": [], "results": [],
                "finish_reason": comp.finish_reason, "parse_error": comp.tool_error,
                "prompt_tokens": usage.get("prompt_tokens"), "completion_tokens": usage.get("completion_tokens"),
                "model_seconds": round(seconds, 3)}
        if len(asked) > len(calls):
            turn["calls_cut"] = len(asked) - len(calls)
            log.warning("agent loop: a reply asked for %d tool calls; %d run (max_calls_per_reply %d, max_calls %d)",
                        len(asked), len(calls), self.ep.max_calls_per_reply, self.ep.max_calls)
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
        self.messages_sent += 1
        return calls

    def user_request(self) -> ToolChatRequest:
        return simulated_user.user_request(self.sim, self.t.messages[self.n_opening:])

    def take_user(self, comp, seconds: float) -> Optional[str]:
        """The simulated user's reply goes into the conversation; returns why it ended, if it did."""
        text = simulated_user.reply_text(comp)
        usage = comp.usage or {}
        calls = simulated_user.user_calls(self.sim, comp, len(self.t.user_replies))
        self.t.user_replies.append({"text": text, "finish_reason": comp.finish_reason,
                                    "prompt_tokens": usage.get("prompt_tokens"),
                                    "completion_tokens": usage.get("completion_tokens"), "seconds": round(seconds, 3),
                                    **({"tool_calls": [{k: c[k] for k in ("id", "name", "arguments", "raw_arguments")
                                                        if k in c} for c in calls], "results": []} if calls else {})})
        self.messages_sent += 1
        if self.t.user_replies[1:]:
            self.user_turn += 1
        if calls:  # to the environment; the user speaks again after the results
            self.t.messages.append({"role": "user", "content": text, "requestor": "user", "tool_calls": [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c.get(
                    "raw_arguments") if "raw_arguments" in c else json.dumps(c["arguments"], ensure_ascii=False)}}
                for c in calls]})
            self.user_calls = calls
            return self.limit_reached()
        self.t.messages.append({"role": "user", "content": text})
        self.phase, self.steps = "agent", 0
        return simulated_user.stop_reason(self.sim, text) or self.limit_reached()

    def problem_of(self, call: dict, offered: Optional[set] = None) -> Optional[str]:
        if call["name"] not in (self.offered if offered is None else offered):
            return f"unknown function {call['name']!r}: not among the tools offered"
        if "raw_arguments" in call:
            return "the arguments are not a JSON object"
        return None

    def record(self, call: dict, result: Optional[str], error: Optional[str], seconds: float) -> None:
        turn = self.t.turns[-1]
        turn["tool_calls"].append({k: call[k] for k in ("id", "name", "arguments", "raw_arguments") if k in call})
        turn["results"].append({"error": error} if error is not None else {"result": result})
        self.failed_calls += error is not None
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
            self.finish(reason or "done")
            return
        self.user_turn += 1
        self.steps = 0
        self.t.messages.extend(self.ep.turn_messages(self.user_turn))
        self.offered |= {t["function"]["name"] if "function" in t else t.get("name")
                         for t in self.ep.tools_at(self.user_turn)}

    def answered(self) -> Optional[str]:
        """With a simulated user: the agent answered without calls, so the user's turn comes; returns
        why the episode ends instead (τ²-bench: an empty agent message is an agent error)."""
        last = self.t.turns[-1]
        self.t.responses.append(last["text"])
        self.phase = "user"
        return "agent_error" if not (last["text"] or "").strip() else self.limit_reached()

    def finish(self, reason: str, snapshot=None, with_snapshot: bool = False) -> None:
        if with_snapshot:
            self.t.snapshots.append(snapshot)
        self.done, self.t.stop_reason = True, reason
        self.t.seconds = time.monotonic() - self.t0

    def limit_reached(self) -> Optional[str]:
        if self.sim is not None:
            if self.messages_sent >= self.sim.max_steps:
                return "max_steps"
            if self.failed_calls >= self.sim.max_errors:
                return "too_many_errors"
        if self.steps >= self.ep.max_steps:
            return "max_steps"
        if self.ep.max_tokens_total is not None and self.t.tokens >= self.ep.max_tokens_total:
            return "max_tokens_total"
        if self.ep.max_seconds is not None and time.monotonic() - self.t0 >= self.ep.max_seconds:
            return "max_seconds"
        return None


def play(episodes, engine, tools=None, workers: int = 2, user_engine=None) -> dict:
    """{episode key: Transcript} for every episode; ``engine`` answers model turns (``Engine.run``),
    ``tools`` (a ``ToolSandbox``) runs the calls of episodes that have an environment, ``user_engine``
    answers the simulated users' turns (default: ``engine``, the agent model plays the user too)."""
    plays = {}
    for ep in episodes:
        plays.setdefault(ep.key(), _Play(ep))
    with ThreadPoolExecutor(max(1, workers)) as pool:
        list(pool.map(lambda p: _start(p, tools), [p for p in plays.values() if p.ep.env is not None]))
        active = list(plays.values())
        rounds = 0
        while active:
            rounds += 1
            users = [p for p in active if p.phase == "user"]
            if users:  # the simulated users answer the agents' last messages (or call their own tools)
                ended = _user_round(users, user_engine or engine)
                list(pool.map(lambda pr: pr[0].finish(pr[1], _snapshot(pr[0], tools), with_snapshot=True), ended))
                list(pool.map(lambda p: _run_user_calls(p, tools), [p for p in users if p.user_calls and not p.done]))
            agents = [p for p in active if p.phase == "agent" and not p.done]
            if agents:
                reqs = [p.request() for p in agents]
                t0 = time.monotonic()
                answers = engine.run(reqs)
                seconds = (time.monotonic() - t0) / max(1, len(reqs))
                todo = [(p, p.take(answers[r.key()][0], seconds)) for p, r in zip(agents, reqs)]
                list(pool.map(lambda pc: _run_calls(pc[0], pc[1], tools), todo))
            active = [p for p in active if not p.done]
            log.info("agent loop: round %d, %d of %d episodes still going", rounds, len(active), len(plays))
    return {k: p.t for k, p in plays.items()}


def _user_round(plays: list, user_engine) -> list:
    """One simulated-user message for each of ``plays``; returns ``(play, reason)`` for those it ended."""
    reqs = [p.user_request() for p in plays]
    t0 = time.monotonic()
    answers = user_engine.run(reqs)
    seconds = (time.monotonic() - t0) / max(1, len(reqs))
    ended = [(p, p.take_user(answers[r.key()][0], seconds)) for p, r in zip(plays, reqs)]
    return [(p, why) for p, why in ended if why]


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
    if calls:
        p.messages_sent += 1  # the environment's reply (τ²-bench counts it as a step)
    if p.sim is not None:
        reason = p.limit_reached() if calls else p.answered()
        if reason:
            p.finish(reason, _snapshot(p, tools), with_snapshot=True)
    elif not calls:
        p.end_turn(None, _snapshot(p, tools))
    else:
        reason = p.limit_reached()
        if reason:
            p.end_turn(reason, _snapshot(p, tools))


def _run_user_calls(p: _Play, tools) -> None:
    """The simulated user's calls, in order, in the episode's environment; the results go to the user."""
    calls, p.user_calls = p.user_calls, []
    reply = p.t.user_replies[-1]
    for call in calls:
        why = p.problem_of(call, p.user_offered)
        result, error, seconds = None, why or "no tool environment", 0.0
        if why is None and p.ep.env is not None:
            out = tools.call(p.ep.env, p.state, "user:" + call["name"], call["arguments"])
            p.state, result, error, seconds = out.state, out.result, out.error, out.seconds
        reply["results"].append({"error": error} if error is not None else {"result": result})
        reply["tool_seconds"] = round(reply.get("tool_seconds", 0.0) + seconds, 3)
        p.failed_calls += error is not None
        p.t.messages.append({"role": "tool", "content": result if error is None else f"Error: {error}",
                             "name": call["name"], "tool_call_id": call["id"], "requestor": "user"})
    p.messages_sent += 1  # the environment's reply
    reason = p.limit_reached()
    if reason:
        p.finish(reason, _snapshot(p, tools), with_snapshot=True)


def play_with_sandbox(episodes, engine, workers: int = 2, user_engine=None) -> dict:
    """``play`` with a tool sandbox opened for the episodes that have an environment, then closed;
    the sandbox's isolation layer is counted in the engine's stats."""
    if not any(ep.env is not None for ep in episodes):
        return play(episodes, engine, user_engine=user_engine)
    from evalkit.sandbox.tools import ToolSandbox
    with ToolSandbox(workers=workers) as tools:
        return play(episodes, engine, tools, workers, user_engine)
