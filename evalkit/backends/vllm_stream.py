"""Finished vLLM outputs as they finish, from the engine's step loop (as ``LLM._run_engine`` runs
it), so the evalkit engine can commit them every few seconds while the whole chunk stays in the
engine's batch. Falls back to one blocking ``LLM.generate`` where the vLLM build lacks the hooks."""
from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def stream_engine(backend, prompts: list, params: list):
    """Lists of (index, RequestOutput) as requests finish; every index exactly once."""
    if not prompts:
        return
    llm = backend.llm
    engine = getattr(llm, "llm_engine", None)
    add = getattr(llm, "_add_completion_requests", None)
    if add is None or engine is None or not hasattr(engine, "step") or engine.has_unfinished_requests():
        yield list(enumerate(backend._generate(prompts, params)))
        return
    from vllm import TokensPrompt

    ids = add(prompts=[TokensPrompt(prompt_token_ids=p) for p in prompts], params=params, use_tqdm=False,
              lora_request=backend._lora[1] if backend._lora else None)
    # add_request returns vLLM's internal ids ("<external>-<8 random chars>"); outputs carry the
    # external one, which LLM._add_request takes from its counter
    where = {}
    for i, rid in enumerate(ids or []):
        where[str(rid)] = i
        where.setdefault(str(rid).split("-", 1)[0], i)
    left = len(prompts)
    try:
        while left and engine.has_unfinished_requests():
            group = []
            for out in engine.step():
                if not out.finished:
                    continue
                rid = str(out.request_id)
                i = where.get(rid, where.get(rid.split("-", 1)[0]))
                if i is None:
                    raise RuntimeError(f"vLLM returned an output for request {rid!r}, which evalkit did not add")
                group.append((i, out))
            if group:
                left -= len(group)
                backend._count([prompts[i] for i, _ in group], [o for _, o in group])
                yield group
    except BaseException:
        if ids:  # interrupted or failed: nothing of ours may linger in the engine
            try:
                engine.abort_request(list(ids), internal=True)
            except Exception:  # noqa: BLE001 (best effort while unwinding)
                log.debug("could not abort vLLM requests", exc_info=True)
        raise
    if left:
        raise RuntimeError(f"vLLM engine finished with {left} of {len(prompts)} requests unanswered")
