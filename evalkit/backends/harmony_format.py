"""What the offline backends (hf, vllm) do for gpt-oss's harmony format.

* Detection: a tokenizer is harmony-format when ``<|start|>``, ``<|channel|>`` and ``<|message|>``
  are among its added (special) tokens, as in gpt-oss's tokenizer.
* Prompts: rendered by the model's own chat template (gpt-oss's writes the system message with the
  model identity, ``Knowledge cutoff: 2024-06``, ``Current date: ...`` and ``Reasoning: low|medium|high``,
  and the run's system prompt as a developer message ``# Instructions``); ``reasoning_effort`` goes
  in as the template variable of that name (``effort_kwargs``), as transformers' and vLLM's chat
  rendering pass it. The reference renderer is ``openai_harmony``'s
  ``render_conversation_for_completion``; tests/backends/test_harmony_backends.py checks the template's
  text against it.
* Decoding: the channels are special tokens, so a harmony model's completion is decoded WITH them
  (vLLM: ``skip_special_tokens=False, spaces_between_special_tokens=False``; transformers:
  ``decode(..., skip_special_tokens=False)`` without padding), and ``evalkit.scoring.harmony`` splits
  it before scoring. Other tokenizers decode as before.
"""
from __future__ import annotations

from typing import Optional

HARMONY_MARKERS = ("<|start|>", "<|channel|>", "<|message|>")
HARMONY_STOPS = ("<|return|>", "<|call|>")  # gpt-oss's generation_config eos ids, with <|endoftext|>
OFFLINE_EFFORTS = ("low", "medium", "high")


def is_harmony_tokenizer(tokenizer) -> bool:
    try:
        added = tokenizer.get_added_vocab()
    except (AttributeError, NotImplementedError):
        return False
    return all(t in added for t in HARMONY_MARKERS)


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
    return [added[t] for t in HARMONY_STOPS if t in added]


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
