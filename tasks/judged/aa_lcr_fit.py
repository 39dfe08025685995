"""Whether AA-LCR's prompts fit the model, counted before any generation.

AA-LCR puts every document of a question (~10k to ~100k tokens) before the question in one user
turn. A prompt longer than the model's context would otherwise reach the backend, which keeps its
*last* tokens (evalkit's rule for over-long prompts): the head of the documents and the header that
opens them would vanish without a trace in the score. So the task counts each prompt as the model will
see it, with the model's tokenizer (``RunContext.tokenize``; a chat prompt rendered through the model's
chat template first, as ``evalkit.run.checks`` counts one), against what the model's context leaves for
the prompt: its context length (the backend's ``max_length``, as ``evalkit.run.checks`` reads it: the
server's ``max_model_len`` or ``--model-args max_length=N`` for ``openai:``, the model config for
``hf:``/``vllm:``) less the answer's ``max_tokens``. Then

- a prompt that does not fit stops the run, before any request is sent, with one line naming the
  question and the sizes (``ValueError`` from ``requests``, raised while the run plans);
- unless the user asks ``--task-args aa_lcr:truncate=left``: the documents are cut from the left (the
  fewest leading characters of the documents' text, found by a bracketing search over token counts of
  the prompt's tail, within ``SLACK`` tokens of the room) and the sample records how many prompt tokens
  were cut (``truncated_tokens``; ``truncated_chars``, ``prompt_tokens_full``).

Without a tokenizer (an ``openai:`` server in text mode) nothing can be counted: the run says so in
one warning line and goes on unchecked (``--model-args tokenizer=DIR_OR_HUB_ID`` counts);
``truncate=left`` then stops the run, as does a model that reports no context length.

The context length is ``RunContext.max_length``, which the run sets from the backend (the task layer
imports no backend).
"""
from __future__ import annotations

import logging
from typing import Callable, Optional

log = logging.getLogger(__name__)

#: the cut stops once the prompt is within this many tokens under the room it has (or cannot move)
SLACK = 16
MAX_STEPS = 64
TRUNCATE_MODES = ("left",)


def truncate_mode(task_name: str, options: dict) -> Optional[str]:
    """The ``truncate`` option: ``left`` or None (``none``/``false``/unset)."""
    raw = options.get("truncate")
    if raw is None or str(raw).lower() in ("", "none", "no", "false", "0"):
        return None
    if str(raw).lower() not in TRUNCATE_MODES:
        raise ValueError(f"--task-args {task_name}:truncate={raw!r}: expected left (cut the documents from the left "
                         f"to fit the model's context) or none")
    return str(raw).lower()


def context_length(ctx) -> Optional[int]:
    """The model's context length in tokens, or None when the run cannot tell (see the module's text)."""
    n = getattr(ctx, "max_length", None)
    try:
        return int(n) if n else None
    except (TypeError, ValueError):
        return None


def token_counter(ctx) -> Optional[Callable[[str], int]]:
    """``text -> number of tokens`` by the model's tokenizer, or None when the backend has none."""
    tokenize = getattr(ctx, "tokenize", None)
    if tokenize is None:
        return None
    try:
        tokenize("")
    except NotImplementedError:  # an openai: backend in text mode
        return None
    return lambda text: len(tokenize(text))


def rendered(messages: list, ctx, chat: bool) -> str:
    """The text the model reads: a chat rendered by its template (the turns' text when it has none)."""
    if not chat:
        return messages[-1]["content"]
    if ctx.render_chat is not None:
        try:
            return ctx.render_chat(messages)
        except Exception:  # noqa: BLE001 (no chat template: the server renders it; count the turns)
            pass
    return "".join(m["content"] for m in messages)


def left_cut(size: Callable[[int], int], n_full: int, length: int, room: int) -> tuple[int, int]:
    """(characters cut from the left, prompt tokens left): the fewest leading characters of a text of
    ``length`` characters to drop so that ``size(cut) <= room`` (``size``: the prompt's tokens with the
    first ``cut`` characters of the documents dropped; ``n_full = size(0)``). A bracketing search: ``lo``
    never fits, ``hi`` always does; interpolated steps (tokens are near linear in characters), every
    third one a bisection so that it cannot stall; it stops within ``SLACK`` tokens of the room."""
    lo, n_lo = 0, n_full
    hi, n_hi = length, size(length)
    if n_hi > room:
        raise OverflowError(n_hi)
    for step in range(MAX_STEPS):
        if hi - lo <= 1 or room - n_hi <= SLACK:
            break
        if step % 3 == 2 or n_lo <= n_hi:
            guess = (lo + hi) // 2
        else:
            aim = room - SLACK // 2
            guess = lo + int((n_lo - aim) * (hi - lo) / (n_lo - n_hi))
        guess = min(max(guess, lo + 1), hi - 1)
        n = size(guess)
        if n <= room:
            hi, n_hi = guess, n
        else:
            lo, n_lo = guess, n
    return hi, n_hi


class PromptFit:
    """Counts, checks and, when asked, cuts one task's prompts (state: what each doc's prompt became)."""

    def __init__(self, task_name: str, options: dict):
        self.task_name = task_name
        self.mode = truncate_mode(task_name, options)
        self.cut: dict = {}     # doc id -> characters cut from the left of its documents
        self.sizes: dict = {}   # doc id -> what the sample records of its prompt's size
        self.info: dict = {"tokenizer": None, "context_length": None, "truncate": self.mode}
        self._warned = False

    def _warn(self, text: str) -> None:
        if not self._warned:
            self._warned = True
            log.warning("%s", text)

    def fit(self, doc_id: str, documents: str, messages_for: Callable[[str], list], ctx, max_tokens: int,
            chat: bool) -> None:
        """Count the prompt of one doc (``messages_for(documents_text)``), refuse or cut it; remembers
        the cut (``self.cut``) and the figures its sample records (``self.sizes``)."""
        self.cut.pop(doc_id, None)
        count = token_counter(ctx)
        limit = context_length(ctx)
        self.info.update(tokenizer=count is not None, context_length=limit)
        flag = f"--task-args {self.task_name}:truncate=left"
        if count is None:
            if self.mode:
                raise ValueError(f"task {self.task_name}: {flag} cuts the documents by the model's tokens, and this "
                                 f"backend has no tokenizer: give --model-args tokenizer=DIR_OR_HUB_ID")
            self._warn(f"{self.task_name}: the model's backend has no tokenizer (a text-mode openai: server), so the "
                       f"prompts (up to ~100k tokens of documents) are neither counted nor checked against its "
                       f"context; give --model-args tokenizer=DIR_OR_HUB_ID to count them")
            return
        size = lambda cut: count(rendered(messages_for(documents[cut:]), ctx, chat))  # noqa: E731
        n_full = size(0)
        rec = {"prompt_tokens": n_full}
        if limit is None:
            if self.mode:
                raise ValueError(f"task {self.task_name}: {flag} needs the model's context length, which this "
                                 f"backend does not report: give --model-args max_length=N")
            self._warn(f"{self.task_name}: the model reports no context length, so the prompts are counted but "
                       f"not checked against it (give --model-args max_length=N)")
            self.sizes[doc_id] = rec
            return
        room = max(1, limit - int(max_tokens))
        self.info["max_prompt_tokens"] = room
        rec.update(max_prompt_tokens=room)
        if n_full > room:
            if not self.mode:
                raise ValueError(
                    f"task {self.task_name}: question {doc_id}'s prompt is {n_full:,} tokens and the model's context "
                    f"({limit:,} tokens, {int(max_tokens):,} of them kept for the answer) leaves {room:,} for it: "
                    f"use a longer-context model, lower --gen-kwargs max_tokens, or cut the documents from the left "
                    f"with {flag}")
            try:
                cut, n = left_cut(size, n_full, len(documents), room)
            except OverflowError as e:
                raise ValueError(f"task {self.task_name}: question {doc_id} needs {e.args[0]:,} tokens without any "
                                 f"document, more than the {room:,} the model's context leaves for the prompt"
                                 ) from None
            self.cut[doc_id] = cut
            rec.update(prompt_tokens=n, prompt_tokens_full=n_full, truncated_tokens=n_full - n, truncated_chars=cut)
        self.sizes[doc_id] = rec

    def summary(self, samples) -> dict:
        """The run's figures: context, room, tokenizer, and the prompts' sizes and cuts."""
        sizes = [s.extra.get("prompt_size") for s in samples]
        sizes = [x for x in sizes if x]
        out = dict(self.info)
        if sizes:
            tokens = [x["prompt_tokens"] for x in sizes]
            out.update(prompts_counted=len(tokens), prompt_tokens_max=max(tokens),
                       prompt_tokens_mean=round(sum(tokens) / len(tokens), 1),
                       truncated=sum(1 for x in sizes if x.get("truncated_tokens")),
                       truncated_tokens=sum(x.get("truncated_tokens", 0) for x in sizes))
        return out
