"""Checks on what a run is about to evaluate: no evaluation over zero documents, no few-shot examples
drawn from the evaluation file itself, and every prompt longer than the model's context counted,
warned about and marked in its sample (the backends keep the last tokens that fit)."""
from __future__ import annotations

import logging
from typing import Optional

from evalkit.taskapi.data import DataError
from evalkit.taskapi.requests import GenerateRequest, LoglikelihoodRequest

log = logging.getLogger(__name__)


def check_fewshot_source(task, num_fewshot: Optional[int]) -> None:
    """Refuse, before any model loads, few-shot examples drawn from the evaluation file itself."""
    k = task.num_fewshot if num_fewshot is None else num_fewshot
    if k and k > 0 and task.fewshot_reads_eval_file():
        raise task.fewshot_refusal(k)


def check_tool_environment(task, docs: list) -> None:
    """Before any model work: an agent task's tool environment (its first doc's) runs in the sandbox
    on this host, set up and carried through a state round trip. A broken one stops the run here with
    its cause and fix on one line (``ToolSandboxError``), not after minutes of model work."""
    episode = getattr(task, "episode", None)
    if not docs or getattr(task, "output_type", None) != "agent" or episode is None:
        return
    from evalkit.taskapi.items import RunContext
    env = episode(docs[0], RunContext()).env
    if env is None:
        return
    from evalkit.sandbox.tools import ToolSandbox
    with ToolSandbox(workers=1) as tools:
        tools.check(env)


def require_docs(task, picked: list, config) -> None:
    if picked:
        return
    source = config.data_paths.get(task.name) or task.dataset.hub_path or "its data"
    how = []
    if config.limit is not None:
        how.append(f"--limit {config.limit}")
    raise DataError(f"task {task.name}: no documents to evaluate in {source}"
                    f"{' after ' + ' and '.join(how) if how else ''}; an evaluation over zero documents is an error")


def _max_length(backend) -> Optional[int]:
    try:
        n = getattr(backend, "max_length", None)
        return int(n) if n else None
    except Exception:  # noqa: BLE001 (a backend that cannot tell: nothing to check)
        return None


def _overflow(backend, req, max_len: int) -> Optional[dict]:
    """{prompt_tokens, max_prompt_tokens} when ``req`` does not fit, else None. Prompts whose UTF-8
    size fits are never tokenized (a token is at least one byte), so most runs encode nothing."""
    if isinstance(req, GenerateRequest):
        budget = max(1, max_len - int(req.params.max_tokens))
        size = len((req.prompt or "").encode()) if req.prompt is not None else \
            sum(len(c.encode()) + 16 for _, c in req.messages)
        if size + 2 <= budget:
            return None
        text = req.prompt if req.prompt is not None else backend.apply_chat_template(req.message_dicts())
    elif isinstance(req, LoglikelihoodRequest):
        budget = max_len
        text = req.context + req.continuation
        if len(text.encode()) + 2 <= budget:
            return None
    else:  # perplexity runs in windows by design
        return None
    n = len(backend.encode(text))
    return {"prompt_tokens": n, "max_prompt_tokens": budget} if n > budget else None


def prompts_over_context(task_runs: list, backend) -> dict:
    """{task: {doc position: info}} for the docs whose prompt is longer than the context; warns."""
    max_len = _max_length(backend)
    if not max_len or not hasattr(backend, "encode") or not getattr(backend, "tokenizer_ready", True):
        return {}  # (a vLLM engine that a fully cached run never started is not started for this)
    out = {}
    for tr in task_runs:
        found = {}
        try:
            for pos, reqs in enumerate(tr.requests):
                worst = None
                for r in reqs:
                    info = _overflow(backend, r, max_len)
                    if info and (worst is None or info["prompt_tokens"] > worst["prompt_tokens"]):
                        worst = info
                if worst:
                    found[pos] = worst
        except (AttributeError, NotImplementedError, TypeError):  # no local tokenizer (server text mode)
            return out
        if found:
            out[tr.task.name] = found
            longest = max(v["prompt_tokens"] for v in found.values())
            log.warning("%s: %d of %d prompts are longer than the model's context (%d tokens for the prompt; the "
                        "longest has %d) and were cut from the left; they are marked 'truncated' in the samples "
                        "file (lower --num-fewshot or use a longer-context model)", tr.task.name, len(found),
                        len(tr.requests), next(iter(found.values()))["max_prompt_tokens"], longest)
    return out


def record_truncation(entry, rows: list, found: Optional[dict]) -> None:
    """Mark truncated prompts in the task's run-record entry and in their sample rows."""
    if not found:
        return
    entry.truncated_prompts = len(found)
    for pos, info in found.items():
        rows[pos]["extra"] = {**(rows[pos].get("extra") or {}), "truncated": {**info, "kept": "last tokens"}}
