"""Scoring saved (prompt, response) pairs or conversations with a reward model: what RL teams run
on their rollouts (``evalkit reward``).

Each JSONL row is either ``{"prompt": str, "response": str}`` or ``{"messages": [{"role", "content"},
...]}`` (the last message is the response judged; ``conversation`` is accepted for ``messages``).
Other fields are kept. Rewards go through the engine, so they are deduped, cached by the reward
model's identity and resumable: a rerun after a kill computes only what is missing.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from evalkit.run.engine import Engine
from evalkit.util.jsonio import numbered_jsonl
from evalkit.taskapi.requests import RewardRequest

ROLES = ("system", "user", "assistant", "tool")


def _row_error(path, lineno: int, field: str, why: str) -> ValueError:
    return ValueError(f"{path}:{lineno}: field {field!r}: {why}")


def request_of(row, path, lineno: int, steps: bool = False) -> RewardRequest:
    """The reward request of one input row, or a ValueError naming file, line and field."""
    if not isinstance(row, dict):
        raise ValueError(f"{path}:{lineno}: expected a JSON object, got {type(row).__name__}")
    key = "messages" if "messages" in row else "conversation" if "conversation" in row else None
    if key is not None:
        msgs = row[key]
        if not isinstance(msgs, list) or not msgs:
            raise _row_error(path, lineno, key, "expected a non-empty list of {role, content} messages")
        out = []
        for i, m in enumerate(msgs):
            if not isinstance(m, dict) or not isinstance(m.get("content"), str) or m.get("role") not in ROLES:
                raise _row_error(path, lineno, f"{key}[{i}]", f"expected {{role: one of {'/'.join(ROLES)}, "
                                 f"content: text}}, got {json.dumps(m)[:80]}")
            out.append((m["role"], m["content"]))
        if out[-1][0] != "assistant":
            raise _row_error(path, lineno, f"{key}[{len(out) - 1}]", "the last message must be the assistant's "
                             "response (the one the reward model judges)")
        return RewardRequest(messages=tuple(out), steps=steps)
    for field in ("prompt", "response"):
        if field not in row:
            raise _row_error(path, lineno, field, "missing (a row needs prompt and response, or messages)")
        if not isinstance(row[field], str):
            raise _row_error(path, lineno, field, f"expected text, got {type(row[field]).__name__}")
    return RewardRequest.pair(row["prompt"], row["response"], steps=steps)


def read_rows(path) -> list[tuple[int, dict]]:
    """(line number, object) of every non-blank line; bad JSON names the file and line."""
    out = list(numbered_jsonl(path))
    if not out:
        raise ValueError(f"{path}: no rows")
    return out


def score_file(backend, cache, input_path, output_path, steps: bool = False, progress=True) -> dict:
    """Score every row of ``input_path`` into ``output_path`` (the rows, each with ``reward`` or
    ``step_rewards`` added). Every row is checked before the model loads. Returns a summary."""
    rows = read_rows(input_path)
    reqs = [request_of(r, input_path, n, steps) for n, r in rows]
    engine = Engine(backend, cache, progress=progress)
    answers = engine.run(reqs)
    field = "step_rewards" if steps else "reward"
    out = Path(output_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        for (_, row), req in zip(rows, reqs):
            f.write(json.dumps({**row, field: answers[req.key()]}, ensure_ascii=False) + "\n")
    os.replace(tmp, out)
    values = [answers[r.key()] for r in reqs]
    flat = [v for x in values for v in (x if isinstance(x, list) else [x])]
    return {"rows": len(rows), "field": field, "mean": sum(flat) / len(flat) if flat else None,
            "model": backend.display_name, "identity_hash": backend.identity_hash(),
            "pooling": backend.pooling_info(), "engine": dict(engine.stats), "output": str(out)}


def summary_line(s: dict) -> str:
    e, pool = s["engine"], s["pooling"]
    return (f"{s['rows']} rows scored by {s['model']} ({pool['api']}, activation {pool['activation']}); "
            f"mean {s['field']} {s['mean']:.4f}; requests {e.get('requested', 0)}, unique {e.get('unique', 0)}, "
            f"cached {e.get('cached', 0)}, computed {e.get('computed', 0)} -> {s['output']}")
