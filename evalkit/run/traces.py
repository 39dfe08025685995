"""The run's side of reasoning traces: before a task scores its docs, every generated completion is
split into trace and answer (``evalkit.scoring.thinking``) and the task sees the answer; after scoring, each
sample records what was done (``extra.thinking``: status, trace, raw text, notes, token counts) and
the API's token usage (``extra.usage``). ``--keep-thinking`` scores the raw text but still records
the split, so the budget figures (``evalkit.scoring.budgets``) are the same either way.

A doc answered with K > 1 completions (``--repeats K``, ``--gen-kwargs n=K``) keeps ``extra.thinking``
and ``extra.finish_reason`` for its first completion, as a single-completion run records them, and adds
``extra.completions``: one small dict per completion, in sample order,
``{"finish_reason", "status", "trace_chars", "answer_chars"}`` (``status``: none | closed | unclosed)
plus ``trace_tokens``, ``answer_tokens`` and ``token_source`` where a completion with a trace could be
counted (as in ``extra.thinking``); ``extra.usage`` is then summed over the K completions. Single-completion
rows carry no ``completions`` and are recorded exactly as before.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional

from evalkit.taskapi.requests import Completion
from evalkit.scoring.thinking import Separated, ThinkingConfig, prompt_opens_trace, separate


class PrefillProbe:
    """Whether a task's prompts end inside a trace (a template that prefills ``<think>``), found
    once per task from its first prompt: the prompt text itself, or the chat template rendered for
    its first messages when the backend can do that cheaply."""

    def __init__(self, cfg: ThinkingConfig, render_chat: Optional[Callable] = None):
        self.cfg, self.render_chat = cfg, render_chat

    def __call__(self, requests: list) -> Optional[bool]:
        gen = next((r for reqs in requests for r in reqs if getattr(r, "kind", "") == "generate"), None)
        if gen is None:
            return None
        if gen.prompt is not None:
            return prompt_opens_trace(gen.prompt, self.cfg)
        if self.render_chat is None:
            return None
        try:
            return prompt_opens_trace(self.render_chat(gen.message_dicts()), self.cfg)
        except (NotImplementedError, ValueError, TypeError, AttributeError):  # a server in text mode
            return None


def split_answers(per_doc: list, cfg: ThinkingConfig, prefilled: Optional[bool]) -> tuple[list, list]:
    """(responses the task scores, per doc ``(Separated of each completion, the completions)`` of its
    first generate request, or ``([], [])``). Only generate answers (lists of ``Completion``) change;
    loglikelihoods pass through."""
    out, seps = [], []
    for responses in per_doc:
        new_responses, first = [], None
        for resp in responses:
            if isinstance(resp, list) and resp and all(isinstance(c, Completion) for c in resp):
                split = [separate(c.text, cfg, c.finish_reason, c.trace, prefilled, c.trace_open) for c in resp]
                first = first or (split, list(resp))
                if not cfg.keep:
                    resp = [dataclasses.replace(c, text=s.answer) for c, s in zip(resp, split)]
            new_responses.append(resp)
        out.append(new_responses)
        seps.append(first or ([], []))
    return out, seps


def annotate(samples: list, seps: list, count_tokens: Optional[Callable] = None) -> None:
    """Record in each sample what the split found (only where there was something to find: a
    trace, a note, or usage) and its finish reason; token counts when a tokenizer is at hand.
    K > 1 completions: ``extra.completions`` for each, and usage summed over them (module docstring)."""
    for s, (split, comps) in zip(samples, seps):
        if not split or not comps:
            continue
        sep, comp = split[0], comps[0]
        usage = comp.usage if len(comps) == 1 else summed_usage(comps)
        if usage:
            s.extra["usage"] = dict(usage)
        if len(comps) > 1:
            s.extra["completions"] = [_completion_info(x, c, count_tokens) for x, c in zip(split, comps)]
        if sep.status == "none" and not sep.notes:
            continue
        s.extra.setdefault("finish_reason", comp.finish_reason)  # (tasks that build their own samples)
        info = sep.to_dict()
        info["answer_chars"] = len(sep.answer)
        info["trace_chars"] = len(sep.trace or "")
        tokens = _token_counts(sep, comp, count_tokens)
        if tokens:
            info.update(tokens)
        s.extra["thinking"] = info


def summed_usage(comps: list) -> dict:
    """The integer usage counts of the completions, summed (those that report none add nothing)."""
    total = {}
    for c in comps:
        for k, v in (c.usage or {}).items():
            if isinstance(v, int) and not isinstance(v, bool):
                total[k] = total.get(k, 0) + v
    return total


def _completion_info(sep: Separated, comp: Completion, count_tokens) -> dict:
    info = {"finish_reason": comp.finish_reason, "status": sep.status, "trace_chars": len(sep.trace or ""),
            "answer_chars": len(sep.answer)}
    if sep.status != "none":
        info.update(_token_counts(sep, comp, count_tokens))
    return info


def _token_counts(sep: Separated, comp: Completion, count_tokens) -> dict:
    usage = comp.usage or {}
    # the API's reasoning count, when it has one: hidden traces (o-series) or a count that is not 0
    # for a visible trace (vLLM reports 0 whatever the trace); else the tokenizer counts
    if isinstance(usage.get("reasoning_tokens"), int) and isinstance(usage.get("completion_tokens"), int) and \
            (usage["reasoning_tokens"] > 0 or not sep.trace or count_tokens is None):
        return {"trace_tokens": usage["reasoning_tokens"],
                "answer_tokens": max(0, usage["completion_tokens"] - usage["reasoning_tokens"]),
                "token_source": "usage"}
    if count_tokens is None:
        return {}
    try:
        return {"trace_tokens": len(count_tokens(sep.trace or "")) if sep.trace else 0,
                "answer_tokens": len(count_tokens(sep.answer)) if sep.answer else 0,
                "token_source": "tokenizer"}
    except (NotImplementedError, AttributeError, TypeError, ValueError):
        return {}
