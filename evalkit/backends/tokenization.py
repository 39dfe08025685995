"""Tokenization rules every token-level backend shares (hf, vllm, openai with a tokenizer).

They follow lm-eval so scores stay comparable across backends and with lm-eval itself:
``encode_pair`` moves trailing context whitespace into the continuation and tokenizes the pair as
one string (so the boundary token is the one the model would really see), and ``rolling_windows``
cuts a long text into disjoint windows for perplexity. Keeping them in one place is what makes the
hf and vllm backends score the very same token sequences.
"""
from __future__ import annotations

from typing import Callable, Sequence


def encode_pair(encode: Callable[[str], list[int]], prefix_token_id: int, context: str,
                continuation: str) -> tuple[list[int], list[int]]:
    """(context tokens, continuation tokens) as lm-eval's ``_encode_pair``; an empty context
    becomes the prefix token (BOS, else EOS) so the first continuation token is still scored."""
    return encode_pairs(lambda texts: [encode(t) for t in texts], prefix_token_id, [(context, continuation)])[0]


def encode_pairs(encode_many: Callable[[list[str]], list[list[int]]], prefix_token_id: int,
                 pairs: Sequence[tuple[str, str]]) -> list[tuple[list[int], list[int]]]:
    """``encode_pair`` for many (context, continuation) pairs, with every distinct string (a
    question's context is shared by its choices) tokenized once, all in one ``encode_many`` call."""
    jobs, texts = [], {}
    for context, continuation in pairs:
        if context == "":
            jobs.append((None, continuation))
            texts[continuation] = None
            continue
        n_spaces = len(context) - len(context.rstrip())
        if n_spaces:
            continuation = context[-n_spaces:] + continuation
            context = context[:-n_spaces]
        jobs.append((context, context + continuation))
        texts[context] = texts[context + continuation] = None
    ids = dict(zip(texts, encode_many(list(texts)))) if texts else {}
    out = []
    for context, whole in jobs:
        if context is None:
            out.append(([prefix_token_id], ids[whole]))
        else:
            ctx = ids[context]
            out.append((ctx, ids[whole][len(ctx):]))
    return out


def rolling_windows(tokens: list[int], prefix_token: int, max_len: int):
    """Disjoint windows (context, targets) covering every token once, as lm-eval's
    get_rolling_token_windows(context_len=1) followed by make_disjoint_window."""
    if not tokens:
        return
    first = min(max_len, len(tokens))
    yield [prefix_token], tokens[:first]  # disjoint form of ([prefix] + tokens[:first-1], tokens[:first])
    done = first
    while done < len(tokens):
        n = min(len(tokens) - done, max_len)
        end = done + n
        ctx = tokens[max(0, end - max_len - 1): end - 1]
        yield ctx[: len(ctx) - (n - 1)], tokens[end - n: end]
        done += n


def prefix_token_id(tokenizer) -> int:
    """The token a sequence starts from when there is no context: BOS, else EOS."""
    return tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id


def truncate_pair(ctx: list[int], cont: list[int], max_len: int) -> tuple[list[int], int]:
    """The token sequence a model reads to score ``cont`` after ``ctx`` within ``max_len`` input
    tokens (left-truncated, as HFLM does) and how many of its last tokens are scored."""
    whole = (list(ctx) + list(cont))[-(max_len + 1):]
    return whole, min(len(cont), len(whole) - 1)


class TokenizerMixin:
    """Tokenization shared by backends that hold an HF tokenizer (``self.tokenizer``) and an
    ``add_bos_token`` flag, so HF and vLLM encode prompts and pairs identically. ``chat_template``
    (a template text replacing the tokenizer's) and ``chat_template_kwargs`` (variables the template
    reads, e.g. ``enable_thinking``) shape chat prompts; backends put both in their identity."""

    chat_template = None
    chat_template_kwargs: dict = {}

    @property
    def prefix_token_id(self) -> int:
        return prefix_token_id(self.tokenizer)

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=self.add_bos_token)

    def encode_many(self, texts: list[str]) -> list[list[int]]:
        """``encode`` of each text, in one batch call (a fast tokenizer spreads it over threads)."""
        if not texts:
            return []
        return [list(x) for x in self.tokenizer(list(texts), add_special_tokens=self.add_bos_token)["input_ids"]]

    def encode_pair(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        return encode_pair(self.encode, self.prefix_token_id, context, continuation)

    def encode_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[list[int], list[int]]]:
        return encode_pairs(self.encode_many, self.prefix_token_id, pairs)

    def apply_chat_template(self, messages: list[dict]) -> str:
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                                  chat_template=self.chat_template, **self.chat_template_kwargs)


def chat_template_options(chat_template=None, chat_template_kwargs=None, reasoning_effort=None) -> tuple:
    """(template text or None, kwargs dict, identity entries) from the backend options
    ``chat_template`` (a file path or the template text) and ``chat_template_kwargs`` (a dict or a
    JSON object string); ``reasoning_effort`` (gpt-oss: low, medium, high) becomes the template
    variable of that name. The identity entries are empty when none is given (older cache keys hold)."""
    import hashlib
    import json
    import os
    kwargs = chat_template_kwargs or {}
    if isinstance(kwargs, str):
        try:
            kwargs = json.loads(kwargs)
        except ValueError as e:
            raise ValueError(f"chat_template_kwargs {kwargs!r}: not JSON ({e})") from None
    if not isinstance(kwargs, dict):
        raise ValueError("chat_template_kwargs: expected a JSON object, e.g. '{\"enable_thinking\": false}'")
    from evalkit.scoring.harmony import effort_kwargs
    kwargs = effort_kwargs(reasoning_effort, kwargs)
    text = None
    if chat_template:
        if os.path.isfile(str(chat_template)):
            with open(str(chat_template), encoding="utf-8") as f:
                text = f.read()
        elif "{" in str(chat_template):
            text = str(chat_template)
        else:
            raise ValueError(f"chat_template={chat_template!r}: no such file (give a .jinja file or the template text)")
    ident = {}
    if text is not None:
        ident["chat_template_sha256"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if kwargs:
        ident["chat_template_kwargs"] = dict(sorted(kwargs.items()))
    return text, dict(kwargs), ident
