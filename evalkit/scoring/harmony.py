"""gpt-oss's harmony format: split a completion into its channels and score only ``final``.

gpt-oss models answer in messages, each ``<|start|>assistant<|channel|>NAME<|message|>TEXT`` ended by
``<|end|>`` (more to come), ``<|return|>`` (the last one) or ``<|call|>`` (a tool call). Channels:
``analysis`` (the reasoning trace), ``commentary`` (preambles and tool calls, with ``to=functions.x``
and ``<|constrain|>json`` in the header) and ``final`` (the answer the user sees). The prompt ends in
``<|start|>assistant``, so a completion usually starts at ``<|channel|>``.

Reference: OpenAI's ``openai_harmony`` (``HarmonyEncoding.parse_messages_from_completion_tokens``,
https://github.com/openai/harmony, docs/format.md). That parser works on o200k token ids of a whole,
well-formed transcript; here the input is TEXT (a server's ``content``, or a backend's decode kept
with its special tokens), often cut by ``max_tokens`` mid-message, so this is a small tolerant text
parser instead. What differs: a message with no terminator (cut) is kept with ``ended=False`` where
the package raises; a completion that does not open with ``<|start|>`` is taken to continue the
prompt's ``<|start|>assistant``; whitespace around header words (vLLM's
``spaces_between_special_tokens``) is ignored. tests/scoring/test_harmony.py checks it against the
package's parser on the same token sequences.

Servers that drop special tokens send ``analysis...assistantfinal...``: that stripped form is
recognised only when both the leading ``analysis`` and an ``assistantfinal`` are there (one word
alone is too weak a sign in ordinary text).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

START, END, MESSAGE, CHANNEL = "<|start|>", "<|end|>", "<|message|>", "<|channel|>"
RETURN, CALL, CONSTRAIN = "<|return|>", "<|call|>", "<|constrain|>"
TERMINATORS = (END, RETURN, CALL)
TRACE_CHANNELS = ("analysis", "commentary")
_STRIPPED = re.compile(r"^\s*analysis(?P<trace>.*)assistant\s*final(?P<answer>.*)$", re.DOTALL)


@dataclass(frozen=True)
class HarmonyMessage:
    role: str
    channel: Optional[str]
    content: str
    recipient: Optional[str] = None      # "functions.get_weather" for a tool call
    content_type: Optional[str] = None   # "<|constrain|>json", as the package writes it
    ended: bool = True                   # False: cut before its terminator
    terminator: Optional[str] = None     # <|end|>, <|return|> or <|call|>


def looks_like(text) -> bool:
    """Whether a completion is a harmony transcript (with its special tokens, or stripped)."""
    return isinstance(text, str) and ((CHANNEL in text and MESSAGE in text) or bool(_STRIPPED.match(text)))


def parse(text: str) -> list[HarmonyMessage]:
    """The messages of a completion (see the module docstring for how it differs from the package)."""
    if CHANNEL not in text and MESSAGE not in text:
        m = _STRIPPED.match(text)
        if not m:
            return []
        return [HarmonyMessage("assistant", "analysis", m["trace"].strip()),
                HarmonyMessage("assistant", "final", m["answer"].strip())]
    body = text if text.lstrip().startswith(START) else START + "assistant" + text
    out = []
    for chunk in body.split(START)[1:]:
        head, sep, rest = chunk.partition(MESSAGE)
        if not sep:  # a header cut before its <|message|>
            out.append(_message(head, "", False, None))
            continue
        cut = min((rest.find(t), t) for t in TERMINATORS if t in rest) if any(t in rest for t in TERMINATORS) \
            else (-1, None)
        content, term = (rest[:cut[0]], cut[1]) if cut[1] else (rest, None)
        out.append(_message(head, content, term is not None, term))
    return out


def _message(head: str, content: str, ended: bool, term: Optional[str]) -> HarmonyMessage:
    head, ctype = head.split(CONSTRAIN, 1) if CONSTRAIN in head else (head, None)
    role_part, _, chan_part = head.partition(CHANNEL)
    role_words, chan_words = role_part.split(), chan_part.split()
    recipient = next((w[3:] for w in role_words + chan_words if w.startswith("to=")), None)
    role = next((w for w in role_words if not w.startswith("to=")), "assistant")
    channel = next((w for w in chan_words if not w.startswith("to=")), None)
    extra = [w for w in chan_words[1:] if not w.startswith("to=")]  # "commentary json" (no <|constrain|>)
    ctype = (CONSTRAIN + ctype.strip()) if ctype is not None else (extra[0] if extra else None)
    return HarmonyMessage(role, channel, content, recipient, ctype, ended, term)


def split(text: str, finish_reason: str = "stop"):
    """(trace, answer, status, notes) of a harmony completion: the answer is the last ``final``
    message; analysis and commentary (tool calls included) are the trace; no ``final`` channel is an
    unfinished answer (status ``unclosed``), as an unclosed ``<think>`` is."""
    msgs = parse(text)
    notes = []
    finals = [m for m in msgs if m.channel == "final"]
    trace_parts = [m.content.strip() for m in msgs if m.channel != "final" and m.content.strip()]
    for m in msgs:
        if m.recipient:
            notes.append(f"tool call to {m.recipient} in the {m.channel} channel")
        if m.channel not in ("final",) + TRACE_CHANNELS:
            notes.append(f"unknown channel {m.channel!r} kept in the trace")
    trace = "\n".join(trace_parts)
    if not finals:
        notes.append("no final channel")
        if msgs and msgs[-1].terminator == CALL:
            notes.append("the model stopped to call a tool")
        return trace, "", "unclosed", notes
    if len(finals) > 1:
        notes.append(f"{len(finals)} final messages: the last one is the answer")
    last = finals[-1]
    if not last.ended and finish_reason == "length":  # (engines drop the <|return|> that stopped them)
        notes.append("final channel cut by max_tokens")
    after = msgs[msgs.index(last) + 1:]
    if after:  # (already in the trace above)
        notes.append(f"{len(after)} message(s) after the final one kept in the trace")
    return trace, last.content, "closed", notes
