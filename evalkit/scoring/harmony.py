"""gpt-oss's harmony format, in one place: how the offline backends (hf, vllm) render, stop and
decode it, and how a completion is split into its channels so that only ``final`` is scored.

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

What the offline backends do with it:

* Detection: a tokenizer is harmony-format when ``<|start|>``, ``<|channel|>`` and ``<|message|>``
  are among its added (special) tokens, as in gpt-oss's tokenizer (``is_harmony_tokenizer``).
* Prompts: rendered by the model's own chat template (gpt-oss's writes the system message with the
  model identity, ``Knowledge cutoff: 2024-06``, ``Current date: ...`` and ``Reasoning: low|medium|high``,
  and the run's system prompt as a developer message ``# Instructions``); ``reasoning_effort`` goes
  in as the template variable of that name (``effort_kwargs``), as transformers' and vLLM's chat
  rendering pass it. The reference renderer is ``openai_harmony``'s
  ``render_conversation_for_completion``; tests/backends/test_harmony_backends.py checks the template's
  text against it.
* Decoding: the channels are special tokens, so a harmony model's completion is decoded WITH them
  (vLLM: ``skip_special_tokens=False, spaces_between_special_tokens=False``, ``vllm_decode_options``;
  transformers: ``decode(..., skip_special_tokens=False)`` without padding, ``decode_completion``), and
  ``split`` takes it apart before scoring. Other tokenizers decode as before.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

START, END, MESSAGE, CHANNEL = "<|start|>", "<|end|>", "<|message|>", "<|channel|>"
RETURN, CALL, CONSTRAIN = "<|return|>", "<|call|>", "<|constrain|>"
TERMINATORS = (END, RETURN, CALL)
MARKERS = (START, CHANNEL, MESSAGE)  # a harmony tokenizer has all three as added tokens
STOPS = (RETURN, CALL)  # gpt-oss's generation_config eos ids, with <|endoftext|>
OFFLINE_EFFORTS = ("low", "medium", "high")
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


# ---- the offline backends: detection, chat template variables, stops and decoding ----------------
def is_harmony_tokenizer(tokenizer) -> bool:
    try:
        added = tokenizer.get_added_vocab()
    except (AttributeError, NotImplementedError):
        return False
    return all(t in added for t in MARKERS)


def effort_kwargs(reasoning_effort: Optional[str], chat_template_kwargs: dict) -> dict:
    """The chat template variables with ``reasoning_effort`` added (a one-line error for a bad value
    or one that contradicts ``chat_template_kwargs``)."""
    if reasoning_effort is None:
        return chat_template_kwargs
    effort = str(reasoning_effort)
    if effort not in OFFLINE_EFFORTS:
        raise ValueError(f"--model-args reasoning_effort={effort!r}: expected one of {', '.join(OFFLINE_EFFORTS)}")
    given = chat_template_kwargs.get("reasoning_effort")
    if given is not None and given != effort:
        raise ValueError(f"reasoning_effort={effort!r} and chat_template_kwargs reasoning_effort={given!r} differ")
    return {**chat_template_kwargs, "reasoning_effort": effort}


def stop_token_ids(tokenizer) -> list[int]:
    """Ids of the tokens that end a harmony turn (``<|return|>``, ``<|call|>``)."""
    added = tokenizer.get_added_vocab()
    return [added[t] for t in STOPS if t in added]


def decode_completion(tokenizer, ids: list[int], harmony: bool) -> str:
    """The text of generated ids: without special tokens, or for a harmony model with them (cut after
    the first ``<|return|>``/``<|call|>``, padding dropped) so the channels stay visible."""
    if not harmony:
        return tokenizer.decode(ids, skip_special_tokens=True)
    ends = set(stop_token_ids(tokenizer))
    cut = next((k + 1 for k, i in enumerate(ids) if i in ends), len(ids))
    pad = tokenizer.pad_token_id
    kept = [i for i in ids[:cut] if i != pad or i in ends]
    return tokenizer.decode(kept, skip_special_tokens=False)


def vllm_decode_options(harmony: bool) -> dict:
    """SamplingParams entries for the engine's detokenizer."""
    if harmony:
        return {"skip_special_tokens": False, "spaces_between_special_tokens": False}
    return {"skip_special_tokens": True}
