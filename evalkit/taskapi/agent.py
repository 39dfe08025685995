"""What an agent task asks for: an ``Episode`` (a conversation in which the model may call tools),
the ``ToolEnv`` its tools run in, and the ``Transcript`` it is answered with.

A task's ``requests`` returns one ``Episode`` per doc instead of engine requests; the run's agent
loop (``evalkit.agents.loop``) plays it: every model turn is a ``ToolChatRequest`` through the
engine (deduped, cached, so a killed run resumes at the turn it reached), every tool call runs in
evalkit's sandbox (``evalkit.sandbox.tools``), never in the evaluator's process. The transcript
(every message, call, result, error, token count and time) is what the task scores.

A ``ToolEnv`` is Python source run inside the sandbox, defining:

* ``setup(config) -> state``: the initial state (any picklable object) from the JSON ``config``;
* ``call(state, name, arguments) -> result``: one tool call; mutates ``state``, returns something
  JSON-able or a string; an exception is the call's error, given back to the model;
* ``snapshot(state) -> JSON`` (optional): what the transcript keeps of the state after each user
  turn (checkers compare it); the parent never unpickles a state, it only carries it between calls.

The working directory of every call is the episode's own state directory (kept across turns).

An episode with a ``UserSim`` has no fixed user turns: a second model (the user simulator, e.g.
τ²-bench's customer) answers each of the agent's messages, as ``evalkit.agents.loop`` plays it.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Optional

from evalkit.records.provenance import file_sha256
from evalkit.taskapi.requests import GenParams


def canonical_json(obj) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class ToolEnv:
    """Tool code (``source``) and its JSON ``config``; ``name`` labels it in records.

    ``files``: ``(key, host path)`` pairs of data files the code reads. The sandbox shows no host
    files, wherever they live, so the parent reads each file and the code finds its bytes in
    ``FILES[key]``. The digest covers their contents, not their paths: moving the data or the
    virtual environment keeps every cached response."""

    name: str
    source: str
    config: str = "{}"  # canonical JSON
    files: tuple = ()  # ((key, path), ...)

    def digest(self) -> str:
        parts = [self.name, self.source, self.config] + [f"{k}={file_digest(p)}" for k, p in self.files]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()


_FILE_DIGESTS: dict = {}


def file_digest(path) -> str:
    """The sha256 of a file's bytes, remembered while its size and mtime stay the same."""
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
    if key not in _FILE_DIGESTS:
        _FILE_DIGESTS[key] = file_sha256(path)
    return _FILE_DIGESTS[key]


@dataclass(frozen=True)
class UserSim:
    """A simulated user (τ²-bench's ``UserSimulator``): a model that reads the conversation with the
    roles flipped (the agent's messages as ``user``, its own as ``assistant``; tool calls and results
    hidden) under ``system_prompt`` and writes the next user message. The conversation opens with the
    agent's ``first_message``; it ends when the user's message holds one of ``stop_tokens``
    (``user_stop``), after ``max_steps`` messages (agent replies, user replies and tool results, as
    τ²-bench counts steps: ``max_steps``) or ``max_errors`` failed tool calls (``too_many_errors``).

    ``tools`` (canonical JSON of OpenAI-format schemas; τ²-bench's "dual control", e.g. telecom's
    phone): the user model is offered them (calls parsed with ``parser`` where it writes them as
    text); its calls run in the episode's ``ToolEnv`` as ``user:<name>``, their results go back to it
    alone, and it speaks again; the agent never sees them."""

    system_prompt: str
    first_message: str = "Hi! How can I help you today?"
    stop_tokens: tuple = ("###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###")
    params: GenParams = field(default_factory=lambda: GenParams(max_tokens=1024, temperature=0.0))
    max_steps: int = 200
    max_errors: int = 10
    tools: str = "[]"
    parser: Optional[str] = None

    def to_json(self) -> list:
        return [self.system_prompt, self.first_message, list(self.stop_tokens), self.params.to_dict(),
                self.max_steps, self.max_errors] + ([self.tools, self.parser] if self.tools != "[]" else [])


#: tool calls run from one model reply, and in one episode (a reply of 10,000 calls would otherwise
#: run 10,000 sandbox jobs; BFCL's longest gold answers make a handful per step, τ²-bench's a few dozen
#: per episode)
MAX_CALLS_PER_REPLY = 64
MAX_CALLS = 1000


@dataclass(frozen=True)
class Episode:
    """One conversation with tools.

    ``messages``: the opening messages (system, earlier turns), canonical JSON of a list of dicts;
    ``user_turns``: the user messages given one after another: the model acts (calls tools, up to
    ``max_steps`` model turns) until it answers without a call, then the next user turn comes;
    ``tools``: OpenAI-format function schemas (canonical JSON list) available from the start;
    ``added_tools``: ``{turn index: [schemas]}`` (canonical JSON) made available from that turn on;
    ``tool_mode``: ``native`` (the schemas go to the model's chat template or the server's ``tools``)
    or ``prompt`` (the task put them in its prompt; the model's text is parsed for calls);
    ``parser``: the tool-call parser for text (``pythonic``, ``hermes``, ``llama3_json``; native mode
    on a server: the server's own unless given);
    ``max_tokens_total``/``max_seconds``: the episode's budget; over it, it ends (``stop_reason``);
    ``user_sim``: a simulated user answers the agent instead of ``user_turns`` (which is then empty);
    ``max_calls_per_reply``/``max_calls``: tool calls run from one reply and in the whole episode; the
    calls past them are cut, never run, and counted in the turn (``calls_cut``).
    """

    messages: str
    user_turns: tuple
    tools: str
    env: Optional[ToolEnv] = None
    added_tools: str = "{}"
    tool_mode: str = "native"
    parser: Optional[str] = None
    params: GenParams = field(default_factory=GenParams)
    max_steps: int = 20
    max_tokens_total: Optional[int] = None
    max_seconds: Optional[float] = None
    user_sim: Optional[UserSim] = None
    max_calls_per_reply: int = MAX_CALLS_PER_REPLY
    max_calls: int = MAX_CALLS
    kind = "episode"

    def __post_init__(self):
        if self.tool_mode not in ("native", "prompt"):
            raise ValueError(f"tool_mode must be 'native' or 'prompt', not {self.tool_mode!r}")
        if (self.user_sim is None) == (not self.user_turns):
            raise ValueError("an episode has either user turns or a simulated user (user_sim), not both or neither")

    @classmethod
    def build(cls, messages: list, user_turns: list, tools: list, env: Optional[ToolEnv] = None,
              added_tools: Optional[dict] = None, **kw) -> "Episode":
        return cls(canonical_json(messages), tuple(canonical_json(t) for t in user_turns), canonical_json(tools),
                   env, canonical_json({str(k): v for k, v in (added_tools or {}).items()}), **kw)

    def opening(self) -> list[dict]:
        return json.loads(self.messages)

    def turn_messages(self, i: int) -> list[dict]:
        """The messages user turn ``i`` adds (a string is one user message)."""
        t = json.loads(self.user_turns[i])
        if isinstance(t, str):
            return [{"role": "user", "content": t}]
        return t if isinstance(t, list) else [t]

    def tools_at(self, turn: int) -> list[dict]:
        tools = json.loads(self.tools)
        for k, extra in sorted(json.loads(self.added_tools).items(), key=lambda kv: int(kv[0])):
            if int(k) <= turn:
                tools = tools + list(extra)
        return tools

    def key(self) -> str:
        blob = canonical_json([self.messages, list(self.user_turns), self.tools, self.env.digest() if self.env else None,
                               self.added_tools, self.tool_mode, self.parser, self.params.to_dict(), self.max_steps,
                               self.max_tokens_total, self.max_seconds]
                             + ([self.user_sim.to_json()] if self.user_sim is not None else [])
                             + ([{"max_calls": [self.max_calls_per_reply, self.max_calls]}]  # (keys stay as
                                if (self.max_calls_per_reply, self.max_calls) != (MAX_CALLS_PER_REPLY, MAX_CALLS)
                                else []))  # they were at the defaults)
        return hashlib.sha256(blob.encode()).hexdigest()

    def length(self) -> int:
        return len(self.messages) + sum(len(t) for t in self.user_turns)


@dataclass
class Transcript:
    """The played episode. ``messages``: the whole conversation as sent (assistant messages with
    their ``tool_calls``, ``tool`` messages with results or errors); ``turns``: per model turn
    ``{user_turn, tool_calls, results, prompt_tokens, completion_tokens, seconds, finish_reason,
    parse_error}``; ``snapshots``: the environment's ``snapshot`` after each user turn;
    ``responses``: per user turn, the model's final text; ``stop_reason``: ``done``, ``max_steps``,
    ``max_tokens_total``, ``max_seconds`` or ``length`` (a reply hit max_tokens); with a simulated
    user also ``user_stop`` (the user ended it), ``agent_error`` (an empty agent message) and
    ``too_many_errors``; ``user_replies``: per simulated user message ``{text, prompt_tokens,
    completion_tokens, seconds, finish_reason}`` and, for a user with tools, its ``tool_calls`` and
    their ``results`` (in ``messages`` too, marked ``"requestor": "user"``)."""

    messages: list = field(default_factory=list)
    turns: list = field(default_factory=list)
    snapshots: list = field(default_factory=list)
    responses: list = field(default_factory=list)
    stop_reason: str = "done"
    tokens: int = 0
    seconds: float = 0.0
    user_replies: list = field(default_factory=list)

    def calls(self, user_turn: Optional[int] = None) -> list[dict]:
        """Every tool call made (in one user turn), as ``{name, arguments, error?}``."""
        return [c for t in self.turns if user_turn is None or t["user_turn"] == user_turn for c in t["tool_calls"]]

    def user_calls(self) -> list[dict]:
        """Every tool call the simulated user made, as ``{id, name, arguments}``."""
        return [c for r in self.user_replies for c in r.get("tool_calls") or []]

    @classmethod
    def from_json(cls, d: dict) -> "Transcript":
        return cls(**{k: d[k] for k in ("messages", "turns", "snapshots", "responses", "stop_reason", "tokens",
                                        "seconds", "user_replies") if k in d})

    def to_json(self) -> dict:
        return {"messages": self.messages, "turns": self.turns, "snapshots": self.snapshots,
                "responses": self.responses, "stop_reason": self.stop_reason, "tokens": self.tokens,
                "seconds": round(self.seconds, 3), **({"user_replies": self.user_replies} if self.user_replies else {})}
