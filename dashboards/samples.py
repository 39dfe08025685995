"""Samples files (``samples_<task>.jsonl``) as display-ready frames (no Streamlit, no engine).

A line that is not a JSON object is skipped and reported (``frame.attrs["warnings"]``: file and line),
never raised; GPQA-like tasks are redacted here, before anything reaches a page. The prompt is split
into the question (its last block or last user message) and the few-shot examples before it.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Optional

import pandas as pd

from evalkit.records import RunRecord

from .cells import finite
from .labels import is_redacted
from .transcripts import conversation, is_transcript, summary

HIDDEN = "(hidden for this task)"
SAMPLE_COLUMNS = ["doc_id", "doc_index", "target", "extracted", "response", "prompt", "question", "fewshot",
                  "responses", "n_responses", "finish_reason", "conversations"]
MAX_WARNINGS = 20


def empty_samples(warnings: Optional[list] = None) -> pd.DataFrame:
    frame = pd.DataFrame(columns=SAMPLE_COLUMNS)
    frame.attrs["warnings"] = list(warnings or [])
    frame.attrs["redacted"] = False
    return frame


def as_text(x) -> str:
    """Prompts, responses and targets as readable text (chat messages and turns on their own lines)."""
    if x is None:
        return ""
    if isinstance(x, str):
        return x
    if isinstance(x, list):
        if x and all(isinstance(m, dict) and "content" in m for m in x):
            return "\n\n".join(f"[{m.get('role', '?')}] {m.get('content')}" for m in x)
        if len(x) == 1:
            return as_text(x[0])
        return "\n\n".join(f"[{i + 1}] {as_text(v)}" for i, v in enumerate(x))
    if isinstance(x, dict):
        if "text" in x:
            return as_text(x["text"])
        return "; ".join(f"{k}: {as_text(v)}" for k, v in x.items())
    return str(x)


def split_prompt(prompt) -> tuple[str, str]:
    """(question, few-shot part): the last user message of a chat, or the last blank-line block of a
    text prompt; everything before it is the few-shot part (may be empty)."""
    if isinstance(prompt, list) and prompt and all(isinstance(m, dict) and "content" in m for m in prompt):
        users = [i for i, m in enumerate(prompt) if m.get("role") == "user"]
        last = users[-1] if users else len(prompt) - 1
        return as_text(prompt[last:]), as_text(prompt[:last])
    text = as_text(prompt)
    head, sep, tail = text.rstrip().rpartition("\n\n")
    if not sep or not tail.strip():
        return text, ""
    return tail, head


def format_metric(v) -> str:
    """A per-sample metric as people write it: ``1``, ``0``, ``0.5312``; missing is ``–``."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    v = float(v)
    return str(int(v)) if v.is_integer() and abs(v) < 1e15 else f"{v:.4g}"


def _response_text(r) -> str:
    if isinstance(r, str):
        return r
    if is_transcript(r):  # an agent's conversation: its summary line; the messages go to "conversations"
        return summary(r)
    if isinstance(r, list) and len(r) == 2 and isinstance(r[0], str) and isinstance(r[1], str):
        return r[0]                                   # a saved (text, finish_reason) pair
    return as_text(r)


def samples_path(rec: RunRecord, task: str) -> Path:
    return rec.samples_path(task) if task in rec.tasks else rec.path / f"samples_{task}.jsonl"


def read_samples(path: Path) -> tuple[list[dict], list[str]]:
    """The sample objects of one file and a warning per bad line (``FILE line N: why``)."""
    rows, bad = [], []
    with open(path, encoding="utf-8", errors="replace") as f:
        for no, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                s = json.loads(line)
            except json.JSONDecodeError as e:
                bad.append(f"{path} line {no}: not JSON ({e.msg} at column {e.colno}); skipped")
                continue
            if not isinstance(s, dict):
                bad.append(f"{path} line {no}: a JSON {type(s).__name__}, not an object; skipped")
                continue
            rows.append(s)
    return rows, bad


def samples_frame(rec: RunRecord, task: str) -> pd.DataFrame:
    """Display-ready samples; per-sample metrics become ``metric:<name>`` columns. Built column by
    column (200,000 rows in a few seconds: the JSON parsing dominates)."""
    hide = is_redacted(task)
    path = samples_path(rec, task)
    try:
        rows, warnings = read_samples(path)
    except FileNotFoundError:
        return empty_samples()
    except OSError as e:
        return empty_samples([f"{path}: cannot be read ({e})"])
    cols = {c: [] for c in SAMPLE_COLUMNS}
    metrics: dict[str, list] = {}
    n = 0
    for i, s in enumerate(rows):
        raw = s.get("responses")
        texts = [_response_text(r) for r in (raw if isinstance(raw, list) else [raw] if raw else [])]
        extra = s.get("extra")
        question, fewshot = split_prompt(s.get("prompt"))
        cols["doc_id"].append(str(s.get("doc_id")))
        cols["doc_index"].append(s.get("doc_index", i))
        cols["target"].append(as_text(s.get("target")))
        cols["extracted"].append(as_text(s.get("extracted")))
        cols["response"].append(texts[0] if texts else "")
        cols["prompt"].append(as_text(s.get("prompt")))
        cols["question"].append(question)
        cols["fewshot"].append(fewshot)
        cols["responses"].append(texts)
        cols["n_responses"].append(len(texts))
        cols["conversations"].append([conversation(r) for r in raw if is_transcript(r)]
                                     if isinstance(raw, list) else [])
        cols["finish_reason"].append(extra.get("finish_reason") if isinstance(extra, dict) else None)
        sm = s.get("metrics")
        for k, v in (sm.items() if isinstance(sm, dict) else ()):
            if k not in metrics:
                metrics[k] = [None] * n
            metrics[k].append(float(v) if isinstance(v, bool) else finite(v))
        n += 1
        for k, vals in metrics.items():
            if len(vals) < n:
                vals.append(None)
    if hide:
        for c in ("target", "extracted", "response", "prompt", "question", "fewshot"):
            cols[c] = [HIDDEN] * n
        cols["responses"] = [[HIDDEN]] * n
        cols["conversations"] = [[]] * n
    # object columns: converting ~GBs of text to Arrow strings would cost as much as parsing it
    frame = pd.DataFrame({**{c: pd.Series(v, dtype=None if c in ("doc_index", "n_responses") else object)
                             for c, v in cols.items()},
                          **{f"metric:{k}": pd.array(v, dtype="Float64").astype(float) for k, v in metrics.items()}})
    frame.attrs["redacted"] = hide
    if len(warnings) > MAX_WARNINGS:
        warnings = warnings[:MAX_WARNINGS] + [f"{path}: {len(warnings) - MAX_WARNINGS} more bad lines skipped"]
    frame.attrs["warnings"] = warnings
    return frame


def sample_metrics(frame: pd.DataFrame) -> list[str]:
    return [c.split(":", 1)[1] for c in frame.columns if c.startswith("metric:")]


def failures(frame: pd.DataFrame, metric: str, higher_is_better: bool = True,
             threshold: Optional[float] = None) -> pd.Series:
    """Which samples failed on ``metric``: for 0/1 metrics the samples not at the good value, for
    other metrics those worse than ``threshold`` (default: the mean). Samples without it never fail."""
    col = f"metric:{metric}"
    if col not in frame:
        return pd.Series(False, index=frame.index)
    v = pd.to_numeric(frame[col], errors="coerce")
    known = v.dropna()
    if len(known) and known.isin([0.0, 1.0]).all():
        good = 1.0 if higher_is_better else 0.0
        return v.notna() & (v != good)
    cut = float(known.mean()) if threshold is None and len(known) else threshold
    if cut is None:
        return pd.Series(False, index=frame.index)
    return v.notna() & ((v < cut) if higher_is_better else (v > cut))
