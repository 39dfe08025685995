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

Every body carries ``use_activation=False`` (raw logits; ``activation=`` is applied here by
``reward_base.activate``, the function every backend uses) and the served model's name.
"""
from __future__ import annotations

from typing import Optional

from evalkit.backends.reward_base import RewardInputError, activate

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


def _pick(vec, label: int, route: str, activation: str = "none") -> float:
    if isinstance(vec, (int, float)) and not isinstance(vec, bool):
        vec = [vec]
    if not isinstance(vec, list) or not 0 <= label < len(vec) or \
            not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vec):
        raise ReplyError(f"{route}: label {label} not in the returned scores {str(vec)[:80]}")
    try:
        return activate(vec, label, activation)
    except RewardInputError as e:
        raise ReplyError(f"{route}: {e}") from None


def _number(item, field: str, route: str) -> float:
    """``item[field]`` as a number, or a ReplyError naming the route and the field."""
    v = item.get(field) if isinstance(item, dict) else None
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise ReplyError(f"{route}: result without a numeric {field!r} (got {str(item)[:80]})")
    return float(v)


def body(api: str, model: str, inputs: list, task: Optional[str] = None, truncate: Optional[int] = None) -> dict:
    """The request body of one HTTP call. ``inputs``: token-id lists, texts, one ``{"messages": [...]}``
    (a conversation the server renders with its chat template) or (text_1, text_2) pairs."""
    b: dict = {"model": model, "use_activation": False}
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


def read(api: str, reply: dict, n: int, label: int, activation: str = "none") -> list:
    """Per input: the list of values the route returned (``/classify``: the reward; ``/pooling``: a
    vector or rows, read by ``pooled_reward``; ``/score``, ``/rerank``: the score), in a list."""
    route = ROUTES[api]
    if not isinstance(reply, dict):
        raise ReplyError(f"{route}: expected a JSON object, got {type(reply).__name__}")
    if api == "rerank":
        items = _by_index(reply.get("results"), n, route)
        return [[_pick(_number(it, "relevance_score", route), 0, route, activation)] for it in items]
    items = _by_index(reply.get("data"), n, route)
    if api == "classify":
        return [[_pick(it.get("probs") if isinstance(it, dict) else None, label, route, activation)] for it in items]
    if api == "score":
        return [[_pick(_number(it, "score", route), 0, route, activation)] for it in items]
    return [it.get("data") if isinstance(it, dict) else None for it in items]  # /pooling: see pooled_reward


def pooled_reward(data, pooling: str, label: int, tags: Optional[list], n_steps: Optional[int],
                  activation: str = "none"):
    """The reward(s) of one /pooling result: ``classify`` a vector, ``step`` one row per step tag,
    ``token`` one row per prompt token (read at the last token or at the tag positions)."""
    route = "/pooling"
    if pooling == "classify":
        return _pick(data, label, route, activation)
    rows = data if isinstance(data, list) else [data]
    if pooling == "step":
        if n_steps is not None and len(rows) != n_steps:
            raise ReplyError(f"{route}: the server's STEP pooler returned {len(rows)} step scores for {n_steps} "
                             f"steps (does the server's --pooler-config step_tag_id match step_tag?)")
        return [_pick(r, label, route, activation) for r in rows]
    if not rows or (tags is not None and any(not 0 <= t < len(rows) for t in tags)):
        raise ReplyError(f"{route}: {len(rows)} token rows do not cover the step tags {tags}")
    if tags is not None:
        return [_pick(rows[t], label, route, activation) for t in tags]
    return _pick(rows[-1], label, route, activation)
