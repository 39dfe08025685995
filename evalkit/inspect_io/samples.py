"""One Inspect sample (one epoch of one dataset item) read into the parts of an evalkit sample row:
prompt, responses, per-sample metric values, extracted answers, token usage.

Metric names: a scorer whose value is a number or a letter is the metric ``SCORER``; a scorer whose
value is a dict gives one metric ``SCORER/KEY`` per key. Values become floats as Inspect's own
metrics read them (``inspect_ai.scorer.value_to_float``: C=1, P=0.5, I=0, N=0, booleans, numeric
strings); list values and missing scores give no per-sample value.
"""
from __future__ import annotations

import math

KEY_SEP = "/"


def _to_float():
    from inspect_ai.scorer import value_to_float
    return value_to_float()


def _number(v, to_float):
    if v is None or isinstance(v, (list, tuple, dict)):
        return None
    x = to_float(v)
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


def metric_values(scores: dict, to_float=None) -> dict:
    """{evalkit metric name: float} of one sample's ``scores`` (scorer name -> ``Score``)."""
    to_float = to_float or _to_float()
    out = {}
    for scorer, score in (scores or {}).items():
        value = getattr(score, "value", None)
        if isinstance(value, dict):
            for key, v in value.items():
                x = _number(v, to_float)
                if x is not None:
                    out[f"{scorer}{KEY_SEP}{key}"] = x
        else:
            x = _number(value, to_float)
            if x is not None:
                out[scorer] = x
    return out


def raw_scores(scores: dict) -> dict:
    """Each scorer's value as Inspect wrote it (letters stay letters), with its answer and explanation."""
    out = {}
    for scorer, s in (scores or {}).items():
        d = {"value": getattr(s, "value", None)}
        for k in ("answer", "explanation"):
            if getattr(s, k, None) is not None:
                d[k] = getattr(s, k)
        if getattr(s, "metadata", None):
            d["metadata"] = s.metadata
        out[scorer] = d
    return out


def _content_text(content) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for c in content or []:
        text = getattr(c, "text", None)
        parts.append(text if isinstance(text, str) else f"<{getattr(c, 'type', 'content')}>")
    return "\n".join(parts)


def message_dict(m) -> dict:
    return {"role": m.role, "content": _content_text(m.content)}


def prompt_of(sample):
    """What the model read before its first answer: the text of a lone user message, else the
    messages as [{role, content}] (system prompts and templates included); the input when the
    log kept no messages."""
    first = []
    for m in sample.messages or []:
        if m.role == "assistant":
            break
        first.append(m)
    if not first:
        inp = sample.input
        if isinstance(inp, str):
            return inp
        first = list(inp or [])
    if len(first) == 1 and first[0].role == "user":
        return _content_text(first[0].content)
    return [message_dict(m) for m in first]


def input_text(sample) -> str:
    """The dataset input as text (for finding the evalkit doc)."""
    inp = sample.input
    if isinstance(inp, str):
        return inp
    return "\n".join(_content_text(m.content) for m in inp or [] if m.role != "system")


def responses_of(sample) -> list:
    out = getattr(sample, "output", None)
    if out is None or not out.choices:
        return []
    return [_content_text(c.message.content) for c in out.choices]


def extracted_of(scores: dict):
    """The answer each scorer extracted: one value when one scorer gave one, else {scorer: answer}."""
    answers = {k: getattr(s, "answer", None) for k, s in (scores or {}).items()}
    answers = {k: v for k, v in answers.items() if v is not None}
    if not answers:
        return None
    vals = set(map(str, answers.values()))
    return next(iter(answers.values())) if len(vals) == 1 else answers


def usage_of(usage: dict) -> dict:
    """{model: {input_tokens, output_tokens, total_tokens, ...}} without the unset counters."""
    out = {}
    for model, u in (usage or {}).items():
        d = u.model_dump() if hasattr(u, "model_dump") else dict(u)
        out[model] = {k: v for k, v in d.items() if v is not None}
    return out


def target_of(sample):
    t = sample.target
    return list(t) if isinstance(t, (list, tuple)) else t
