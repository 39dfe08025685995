"""The JSON of vLLM's pooling server routes (vLLM 0.32, ``vllm/entrypoints/pooling/``) for reward
requests: one function per route that builds the request body of a batch and one that reads the
rewards back out of the reply, in the batch's order.

* ``POST /classify`` (``ClassificationRequest``): ``input`` = token ids (a batch) or text, or one
  conversation as ``messages``; reply ``data[i].probs`` (one value per label), ``data[i].index``.
* ``POST /pooling`` (``PoolingRequest``) with ``task`` = ``classify`` (one vector per input) or
  ``token_classify`` (one row per token, or per step tag under a STEP pooler); reply
  ``data[i].data``.
* ``POST /score`` (``ScoreTextRequest``): ``text_1`` / ``text_2`` lists scored pairwise; reply
  ``data[i].score``. ``POST /rerank`` (``RerankRequest``): one ``query``, many ``documents``; reply
  ``results[j] = {index, relevance_score}`` sorted by score (read back by ``index``).

Every body carries ``use_activation`` (False: raw rewards; True: vLLM's activation, sigmoid for
one label, softmax for more) and the served model's name.
"""
from __future__ import annotations

from typing import Optional

ROUTES = {"classify": "/classify", "pooling": "/pooling", "score": "/score", "rerank": "/rerank"}


class ReplyError(RuntimeError):
    """A reply that does not have the shape the route documents."""


def _by_index(items: list, n: int, route: str) -> list:
    if not isinstance(items, list) or len(items) != n:
        raise ReplyError(f"{route}: expected {n} results, got {len(items) if isinstance(items, list) else items!r}")
    out = [None] * n
    for pos, it in enumerate(items):
        i = it.get("index", pos) if isinstance(it, dict) else pos
        if not isinstance(i, int) or not 0 <= i < n or out[i] is not None:
            raise ReplyError(f"{route}: result index {i!r} out of range or repeated")
        out[i] = it
    return out


def _pick(vec, label: int, route: str) -> float:
    if isinstance(vec, (int, float)):
        vec = [vec]
    if not isinstance(vec, list) or label >= len(vec):
        raise ReplyError(f"{route}: label {label} not in the returned scores {str(vec)[:80]}")
    return float(vec[label])


def body(api: str, model: str, activation: bool, inputs: list, task: Optional[str] = None,
         truncate: Optional[int] = None) -> dict:
    """The request body of one HTTP call. ``inputs``: token-id lists, texts, one ``{"messages": [...]}``
    (a conversation the server renders with its chat template) or (text_1, text_2) pairs."""
    b: dict = {"model": model, "use_activation": activation}
    if api in ("classify", "pooling"):
        if len(inputs) == 1 and isinstance(inputs[0], dict):
            b.update(messages=inputs[0]["messages"], add_generation_prompt=False)
        elif all(isinstance(x, list) for x in inputs):
            b.update(input=inputs, add_special_tokens=False)  # ids made by the reward model's tokenizer
        else:
            b.update(input=inputs, add_special_tokens=True)  # raw text, as the tokenizer encodes it
        if api == "pooling":
            b.update(task=task, encoding_format="float")
        if truncate:  # keep the end, where the reward is read
            b.update(truncate_prompt_tokens=truncate, truncation_side="left")
    elif api == "score":
        b.update(text_1=[p for p, _ in inputs], text_2=[r for _, r in inputs])
    elif api == "rerank":
        queries = {p for p, _ in inputs}
        if len(queries) != 1:
            raise ValueError("a /rerank call scores the documents of one query")
        b.update(query=inputs[0][0], documents=[r for _, r in inputs], top_n=0)
    else:
        raise ValueError(f"unknown api {api!r}")
    return b


def read(api: str, reply: dict, n: int, label: int) -> list:
    """Per input: the list of values the route returned (``/classify``, ``/pooling``: a vector or
    rows; ``/score``, ``/rerank``: a one-element list)."""
    route = ROUTES[api]
    if not isinstance(reply, dict):
        raise ReplyError(f"{route}: expected a JSON object, got {type(reply).__name__}")
    if api == "rerank":
        items = _by_index(reply.get("results"), n, route)
        return [[float(it["relevance_score"])] for it in items]
    items = _by_index(reply.get("data"), n, route)
    if api == "classify":
        return [[_pick(it.get("probs"), label, route)] for it in items]
    if api == "score":
        return [[float(it["score"])] for it in items]
    return [it.get("data") for it in items]  # /pooling: interpreted by the caller (vector or rows)


def pooled_reward(data, pooling: str, label: int, tags: Optional[list], n_steps: Optional[int]):
    """The reward(s) of one /pooling result: ``classify`` a vector, ``step`` one row per step tag,
    ``token`` one row per prompt token (read at the last token or at the tag positions)."""
    route = "/pooling"
    if pooling == "classify":
        return _pick(data, label, route)
    rows = data if isinstance(data, list) else [data]
    if pooling == "step":
        if n_steps is not None and len(rows) != n_steps:
            raise ReplyError(f"{route}: the server's STEP pooler returned {len(rows)} step scores for {n_steps} "
                             f"steps (does the server's --pooler-config step_tag_id match step_tag?)")
        return [_pick(r, label, route) for r in rows]
    if tags is not None:
        return [_pick(rows[t], label, route) for t in tags]
    return _pick(rows[-1], label, route)
