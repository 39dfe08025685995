"""BFCL's multi-turn APIs as an agent ``ToolEnv``, and BFCL's multi-turn checker run in the sandbox.

Both are the source of ``multi_turn_runtime.py`` (read as text, never imported) after a head that
defines ``_SOURCES``: BFCL's API modules the entry needs, from the ``bfcl-eval`` package beside its
data folder. The environment's config is the entry's ``initial_config``, ``involved_classes`` and
``long_context`` (BFCL loads long-context scenarios for the long_context category); the checker's
adds ``checker: true``. Model-chosen calls are evaluated only there, in the sandbox.
"""
from __future__ import annotations

import contextlib
import json
from functools import lru_cache
from pathlib import Path

from evalkit.taskapi.agent import ToolEnv, Transcript, canonical_json

from .multi_turn_data import api_sources

RUNTIME = Path(__file__).with_name("multi_turn_runtime.py")


@lru_cache(maxsize=64)
def _source(data_dir: str, classes: tuple) -> str:
    head = f"_SOURCES = {api_sources(data_dir, classes)!r}\n"
    return head + RUNTIME.read_text(encoding="utf-8")


def _config(meta: dict, **extra) -> dict:
    return {"initial_config": meta["initial_config"], "involved_classes": meta["involved_classes"],
            "long_context": "long_context" in meta["category"], **extra}


def api_env(meta: dict) -> ToolEnv:
    """The entry's APIs, in their initial state."""
    classes = tuple(meta["involved_classes"])
    return ToolEnv("bfcl:" + "+".join(classes), _source(meta["data_dir"], classes), canonical_json(_config(meta)))


def model_steps(transcript: Transcript, turns: int) -> list:
    """Per user turn, the steps BFCL decodes: each model reply's calls as ``[name, arguments]``; a
    reply without calls, one that could not be read, or one with a call whose arguments are not a
    JSON object does not decode (BFCL's ``decode_execute`` fails) and is left out."""
    out = [[] for _ in range(turns)]
    for t in transcript.turns:
        calls = t["tool_calls"]
        if calls and not t.get("parse_error") and not any("raw_arguments" in c for c in calls):
            out[t["user_turn"]].append([[c["name"], c["arguments"]] for c in calls])
    return out


@contextlib.contextmanager
def checker(workers: int = 2):
    """``check(meta, ground_truth, transcript) -> verdict`` (BFCL's ``multi_turn_checker``, with
    ``valid``, ``error_type``, ``error_message``, ``turn`` and ``decoded``) in a sandbox opened for it."""
    from evalkit.sandbox.tools import ToolSandbox

    def check(meta: dict, ground_truth: list, transcript: Transcript) -> dict:
        steps = model_steps(transcript, len(ground_truth))
        if len(transcript.responses) < len(ground_truth):
            return {"valid": False, "error_type": "multi_turn:force_terminated", "turn": len(transcript.responses) - 1,
                    "error_message": f"Model was force-terminated during inference phase ({transcript.stop_reason}). "
                                     f"The length of the model result turns ({len(transcript.responses)}) does not "
                                     f"match the length of the ground truth turns ({len(ground_truth)}).",
                    "decoded": None}
        classes = tuple(meta["involved_classes"])
        env = ToolEnv("bfcl-multi-turn-checker", _source(meta["data_dir"], classes),
                      canonical_json(_config(meta, checker=True)))
        out = tools.call(env, None, "check", {"model": steps, "ground_truth": ground_truth})
        if out.error is not None:
            raise RuntimeError(f"BFCL's multi-turn checker failed on {meta['id']}: {out.error}")
        return json.loads(out.result)

    with ToolSandbox(workers=workers, timeout=60.0, memory_mb=2048) as tools:
        yield check
