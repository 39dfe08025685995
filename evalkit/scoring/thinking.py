"""Reasoning traces: separate a model's thinking from its answer before anything is scored.

A completion may carry its trace in two ways: inside the text between markers (``<think>...</think>``
by default; other pairs through ``--model-args think_start=...,think_end=...``), or in a separate
field of an OpenAI-compatible reply (``reasoning_content`` / ``reasoning``, e.g. vLLM's
``--reasoning-parser``), which the backend keeps in ``Completion.trace``.

``separate`` turns one completion into a ``Separated``: the trace, the answer (what scoring sees),
a ``status`` and plain-words ``notes`` for everything unusual. Nothing here raises on odd text:

==================  =============================================================================
status              meaning
==================  =============================================================================
``none``            no trace: the whole text is the answer
``closed``          a trace that ended (closing marker seen, or a server's separate field)
``unclosed``        the trace never ended (cut by max_tokens, or the model stopped mid-thought):
                    the answer is empty, it is never scored as an answer
==================  =============================================================================

The opening marker may already be in the prompt (templates that prefill ``<think>``): then the
text starts inside the trace. ``prefilled`` says so (True/False), or ``None`` to infer it: a closing
marker with no opening one before it means the trace started in the prompt. Repeated or nested
markers: the trace runs to the LAST closing marker (everything the model said before its final
answer is thinking). A closing marker without any opening one is noted, as is an empty answer.

gpt-oss's harmony transcripts (``<|channel|>analysis<|message|>...<|end|>...<|channel|>final<|message|>``)
are recognised unless other markers are given (``source`` ``harmony``): only the ``final`` channel is
the answer (``evalkit.scoring.harmony``), and a transcript without one is ``unclosed``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Optional

from evalkit.scoring import harmony

DEFAULT_START, DEFAULT_END = "<think>", "</think>"
OPTION_KEYS = ("think_start", "think_end", "think_prefilled", "keep_thinking")


@dataclass(frozen=True)
class ThinkingConfig:
    start: str = DEFAULT_START
    end: str = DEFAULT_END
    prefilled: Optional[bool] = None   # None: infer (closing marker without an opening one)
    keep: bool = False                 # --keep-thinking: score the raw text, as before

    @classmethod
    def from_options(cls, opts: Optional[dict]) -> "ThinkingConfig":
        """From the run config's ``thinking`` block (``think_start``, ``think_end``, ``think_prefilled``,
        ``keep_thinking``); a bad value is a one-line error naming the key."""
        opts = dict(opts or {})
        unknown = sorted(set(opts) - set(OPTION_KEYS))
        if unknown:
            raise ValueError(f"thinking options: unknown {', '.join(unknown)}; allowed: {', '.join(OPTION_KEYS)}")
        start, end = opts.get("think_start", DEFAULT_START), opts.get("think_end", DEFAULT_END)
        for k, v in (("think_start", start), ("think_end", end)):
            if not isinstance(v, str) or not v.strip():
                raise ValueError(f"--model-args {k}={v!r}: expected a non-empty marker such as <think>")
        if start == end:
            raise ValueError(f"--model-args think_start and think_end are both {start!r}; they must differ")
        pre = opts.get("think_prefilled")
        if pre not in (None, True, False, "auto"):
            raise ValueError(f"--model-args think_prefilled={pre!r}: expected true, false or auto")
        return cls(start, end, None if pre == "auto" else pre, bool(opts.get("keep_thinking", False)))

    def to_options(self) -> dict:
        out = {}
        if self.start != DEFAULT_START:
            out["think_start"] = self.start
        if self.end != DEFAULT_END:
            out["think_end"] = self.end
        if self.prefilled is not None:
            out["think_prefilled"] = self.prefilled
        if self.keep:
            out["keep_thinking"] = True
        return out


def pop_options(model_args: dict) -> dict:
    """Take the trace options (``think_start``...) out of a backend's model args, checked: they
    belong to the run config's ``thinking`` block, not to any backend's constructor."""
    opts = {k: model_args.pop(k) for k in OPTION_KEYS if k in model_args}
    ThinkingConfig.from_options(opts)
    return opts


@dataclass
class Separated:
    raw: str
    trace: Optional[str]
    answer: str
    status: str = "none"           # none | closed | unclosed
    source: Optional[str] = None   # "markers" | "field" (the server's reasoning field) | "harmony" | None
    notes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        d = {"status": self.status, "source": self.source, "trace": self.trace, "raw": self.raw}
        if self.notes:
            d["notes"] = list(self.notes)
        return d


def separate(text: str, cfg: ThinkingConfig = ThinkingConfig(), finish_reason: str = "stop",
             field_trace: Optional[str] = None, prefilled: Optional[bool] = None,
             field_open: Optional[bool] = None) -> Separated:
    """Trace and answer of one completion. ``field_trace``: the server's separate reasoning field
    (``field_open``: the server said it never ended, e.g. a null answer field); ``prefilled``: whether
    the prompt ends in the opening marker (None: unknown; ``cfg.prefilled`` wins when set)."""
    text = text if isinstance(text, str) else ""
    pre = cfg.prefilled if cfg.prefilled is not None else prefilled
    if field_trace is not None:
        return _from_field(text, field_trace, cfg, finish_reason, bool(field_open))
    if (cfg.start, cfg.end) == (DEFAULT_START, DEFAULT_END) and harmony.looks_like(text):
        return _from_harmony(text, finish_reason)
    s, e = cfg.start, cfg.end
    first_open, last_close = text.find(s), text.rfind(e)
    notes = []
    if text.count(s) > 1 or text.count(e) > 1:
        notes.append(f"repeated or nested markers ({text.count(s)} x {s}, {text.count(e)} x {e}); the trace runs "
                     f"to the last {e}")
    if last_close >= 0:
        if first_open < 0 or first_open > last_close:
            if pre is not True:
                notes.append(f"{e} without an opening {s} (opening marker prefilled by the template?): "
                             f"the text before it is the trace")
            trace_start = 0
        else:
            trace_start = first_open + len(s)
            if text[:first_open].strip():
                notes.append(f"text before {s} ({len(text[:first_open].strip())} chars) is kept in the trace")
            trace_start = 0 if text[:first_open].strip() else trace_start
        trace = _strip_markers(text[trace_start:last_close], cfg)
        answer = text[last_close + len(e):]
        if s in answer:  # a new trace opened after the last close and never ended
            notes.append(f"a trace opened after the last {e} and never closed")
            cut = answer.find(s)
            trace, answer = trace + answer[cut:], answer[:cut]
            if not answer.strip():
                return _unclosed(text, trace, notes, finish_reason, "markers")
        if not answer.strip():
            notes.append("empty answer after the trace")
        return Separated(text, trace, tidy_answer(answer), "closed", "markers", notes)
    if first_open >= 0:
        notes.append(f"{s} never closed")
        return _unclosed(text, text[first_open + len(s):], notes, finish_reason, "markers")
    if pre:
        notes.append(f"the prompt opened the trace ({s}) and it never closed")
        return _unclosed(text, text, notes, finish_reason, "markers")
    return Separated(text, None, text, "none", None, notes)


def tidy_answer(answer: str) -> str:
    """The answer after a trace without the whitespace that separated it: spaces on the marker's
    line, or the blank lines after it; an answer that starts on a line of its own keeps that line's
    indentation (a code completion's function body)."""
    if re.match(r"[ \t]*\n", answer):
        answer = re.sub(r"^(?:[ \t]*\n)+", "", answer)
    else:
        answer = answer.lstrip(" \t")
    return answer.rstrip()


def _strip_markers(trace: str, cfg: ThinkingConfig) -> str:
    return trace.replace(cfg.start, "\n").replace(cfg.end, "\n").strip()


def _unclosed(raw, trace, notes, finish_reason, source) -> Separated:
    notes = list(notes)
    notes.append("cut by max_tokens while thinking" if finish_reason == "length" else
                 "the model stopped while thinking")
    notes.append("no answer: the unfinished trace is not scored")
    return Separated(raw, trace.strip(), "", "unclosed", source, notes)


def _from_field(text: str, field_trace: str, cfg: ThinkingConfig, finish_reason: str, open_: bool) -> Separated:
    """The server already split the trace off (``reasoning_content``): the content is the answer.
    Markers left in the content (a parser that missed a second trace) are separated too."""
    inner = separate(text, replace(cfg, prefilled=False)) if (cfg.start in text or cfg.end in text) else None
    if inner is not None and inner.trace is not None:
        trace = (field_trace + "\n" + inner.trace).strip()
        notes = ["the answer field held its own trace markers too"] + inner.notes
        if inner.status == "unclosed":
            return _unclosed(text, trace, notes, finish_reason, "field")
        return Separated(text, trace, inner.answer, "closed", "field", notes)
    if not text.strip():
        if finish_reason == "length" or open_:
            return _unclosed(text, field_trace, ["the server returned a trace and no answer field"] if open_ else [],
                             finish_reason, "field")
        return Separated(text, field_trace, "", "closed", "field", ["empty answer after the trace"])
    return Separated(text, field_trace, tidy_answer(text), "closed", "field", [])


def _from_harmony(text: str, finish_reason: str) -> Separated:
    """gpt-oss's channels (``evalkit.scoring.harmony``): the ``final`` channel is the answer, analysis
    and commentary the trace; no final channel is an unfinished answer, as an unclosed trace is."""
    trace, answer, status, notes = harmony.split(text, finish_reason)
    if status == "unclosed":
        return _unclosed(text, trace, notes, finish_reason, "harmony")
    if not answer.strip():
        notes.append("empty final channel")
    return Separated(text, trace or None, tidy_answer(answer), "closed", "harmony", notes)


def prompt_opens_trace(prompt: Optional[str], cfg: ThinkingConfig) -> Optional[bool]:
    """Whether a rendered prompt ends inside a trace (the template prefilled the opening marker)."""
    if not isinstance(prompt, str):
        return None
    tail = prompt.rstrip()
    return cfg.start in tail and tail.rfind(cfg.start) > tail.rfind(cfg.end)
