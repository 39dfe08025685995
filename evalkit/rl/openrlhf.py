"""OpenRLHF rewards: what its ``reward_func`` file and its remote reward server share.

OpenRLHF (``openrlhf/utils/agent.py``, ``SingleTurnAgentExecutor``) either loads a Python file
given as ``--remote_rm_url path.py`` (``spec_from_file_location("reward_func", path)``, then
``asyncio.to_thread(reward_func, queries, prompts, labels)``), or POSTs
``{"query": [...], "prompts": [...], "labels": [...]}`` to an HTTP URL (aiohttp, 180 s). ``query`` is
``tokenizer.decode(prompt + response tokens, skip_special_tokens=False)``: the prompt (with its
chat template) followed by the response and end-of-turn tokens. The answer is
``{"rewards": [...], "scores": [...], "extra_logs": {...}}``; every extra log value becomes a
tensor (``samples_generator.py``), so they are numbers: ``evalkit_usable`` and
``evalkit_verifier_id`` (the first 24 bits of the verifier hash, a number a log can hold).

Labels: the gold (``evalkit.rl.gold``) when one task is served, else a JSON object
``{"task": "math", "gold": ...}`` (or ``{"data_source": "evalkit/math", ...}``) naming the task.
"""
from __future__ import annotations

import json
from collections import defaultdict
from typing import Any, Optional, Sequence

from evalkit.rl.verifier import shared_verifier

END_TOKENS = ("<|im_end|>", "<|endoftext|>", "</s>", "<|eot_id|>", "<|end_of_text|>", "<end_of_turn>",
              "<|end|>", "<｜end▁of▁sentence｜>", "<pad>", "<|pad|>")


class BadRequest(ValueError):
    """A request body the reward cannot score (the server answers 400)."""


def response_of(query: str, prompt: Optional[str]) -> Optional[str]:
    """The response part of an OpenRLHF query: after the prompt, end-of-turn tokens removed.
    None when the prompt is not in the query (its few-shot answers must never be scored)."""
    if not isinstance(query, str):
        return None
    if prompt:
        if query.startswith(prompt):
            text = query[len(prompt):]
        elif prompt in query:
            text = query[query.rfind(prompt) + len(prompt):]
        else:
            return None
    else:
        text = query
    changed = True
    while changed:
        changed = False
        stripped = text.rstrip()
        for tok in END_TOKENS:
            if stripped.endswith(tok):
                text, changed = stripped[: -len(tok)], True
    return text


def verifier_id(hash_: str) -> int:
    return int(hash_.split("-")[-1][:6], 16)


def route(label: Any, tasks: Sequence[str]) -> tuple[str, Any]:
    """(task, gold) of one label."""
    obj = label
    if isinstance(label, str) and label.strip().startswith("{"):
        try:
            obj = json.loads(label)
        except RecursionError:
            raise BadRequest("a label's JSON is nested too deep") from None
        except ValueError:  # not JSON (or an integer over Python's digit limit): the label is the gold itself
            obj = label
    if isinstance(obj, dict) and ("task" in obj or "data_source" in obj) and "gold" in obj:
        task = obj.get("task") or str(obj["data_source"]).removeprefix("evalkit/")
        if task not in tasks:
            raise BadRequest(f"label names task {task!r}; this reward serves {', '.join(tasks)}")
        return task, obj["gold"]
    if len(tasks) != 1:
        raise BadRequest(f"this reward serves several tasks ({', '.join(tasks)}): each label must be "
                         '{"task": NAME, "gold": ...}')
    return tasks[0], label


def _as_list(body: dict, key: str, n: Optional[int]) -> list:
    v = body.get(key)
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list):
        raise BadRequest(f"field {key!r} should be a list" + ("" if key in body else " (it is missing)"))
    if n is not None and len(v) != n:
        raise BadRequest(f"field {key!r} has {len(v)} items, 'query' has {n}")
    return v


def check_body(body: Any) -> tuple[list, list, list]:
    if not isinstance(body, dict):
        raise BadRequest("the body should be a JSON object {\"query\": [...], \"prompts\": [...], \"labels\": [...]}")
    queries = _as_list(body, "query" if "query" in body else "queries", None)
    if not all(isinstance(q, str) for q in queries):
        raise BadRequest("every 'query' item should be a string")
    prompts = _as_list(body, "prompts", len(queries))
    if not all(p is None or isinstance(p, str) for p in prompts):
        raise BadRequest("every 'prompts' item should be a string")
    labels = _as_list(body, "labels", len(queries))
    return queries, prompts, labels


def score(queries: Sequence[str], prompts: Sequence[Optional[str]], labels: Sequence[Any], tasks: Sequence[str],
          **options) -> dict:
    """OpenRLHF's reward answer for a batch (one verifier call per task)."""
    n = len(queries)
    routed = [route(lab, tasks) for lab in labels]
    rewards, usable, ids = [0.0] * n, [0.0] * n, [0.0] * n
    reasons = [""] * n
    groups = defaultdict(list)
    for i, (task, _) in enumerate(routed):
        groups[task].append(i)
    for task, idx in groups.items():
        ver = shared_verifier(task, **options)
        texts = [response_of(queries[i], prompts[i]) for i in idx]
        for i, text, v in zip(idx, texts, ver.verify_batch([routed[i][1] for i in idx], texts)):
            rewards[i] = 0.0 if v.reward is None else float(v.reward)
            usable[i] = float(v.reward is not None)
            reasons[i] = "prompt not found in query" if text is None else v.reason
            ids[i] = float(verifier_id(ver.version_hash))
    return {"rewards": rewards, "scores": rewards,
            "extra_logs": {"evalkit_usable": usable, "evalkit_verifier_id": ids}, "reasons": reasons}
