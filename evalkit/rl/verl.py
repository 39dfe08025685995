"""verl reward functions, routed by ``data_source="evalkit/<task>"``.

verl loads a custom reward function with ``reward.custom_reward_function.path=pkg://evalkit.rl.verl``
and ``.name=compute_score`` (``verl.utils.import_utils.load_extern_object``). Its reward managers
call (``verl/workers/reward_manager/naive.py``, ``experimental/reward_loop/reward_manager/naive.py``)

    compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=..., **reward_kwargs)

with the decoded response, ``reward_model.ground_truth`` and ``extra_info`` of the parquet row,
and the batch manager (``workers/reward_manager/batch.py``) calls ``compute_score_batch`` with
``data_sources=``, ``solution_strs=``, ``ground_truths=``, ``extra_infos=``. A dict result needs a
``"score"``; every other key becomes a per-item column of ``reward_extra_info``, so every item
returns the same keys. Options come from ``reward_kwargs`` (``strip_think=True`` ...).
A row whose gold is unusable scores 0.0 with ``usable: False`` (verl has no "skip").
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Optional, Sequence

from evalkit.rl.verifier import Verdict, shared_verifier

PREFIX = "evalkit/"
_OPTION_KEYS = ("metric", "strip_think", "use_guards", "max_chars", "max_boxed", "chat", "seed")


def task_of(data_source: str) -> str:
    if not isinstance(data_source, str) or not data_source.startswith(PREFIX):
        raise ValueError(f"evalkit.rl.verl scores data_source 'evalkit/<task>', got {data_source!r} "
                         "(write the data with `evalkit export-rl --format verl`)")
    return data_source[len(PREFIX):]


def _result(v: Verdict, hash_: str) -> dict:
    return {"score": 0.0 if v.reward is None else float(v.reward), "usable": v.reward is not None,
            "reason": v.reason, "extracted": "" if v.extracted is None else str(v.extracted)[:200],
            "verifier_hash": hash_}


def _options(kwargs: dict, extra_info) -> dict:
    """Verifier options: the row's ``extra_info.evalkit`` (``chat``, ``seed``, as export-rl wrote them),
    then ``reward_kwargs``."""
    row = extra_info.get("evalkit") if isinstance(extra_info, dict) else None
    opts = {k: row[k] for k in ("chat", "seed") if isinstance(row, dict) and row.get(k) is not None}
    opts.update({k: kwargs[k] for k in _OPTION_KEYS if k in kwargs})
    return {k: (bool(v) if k in ("chat", "strip_think", "use_guards") else v) for k, v in opts.items()}


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: Optional[dict] = None,
                  **kwargs) -> dict:
    ver = shared_verifier(task_of(data_source), **_options(kwargs, extra_info))
    return _result(ver.verify(ground_truth, solution_str), ver.version_hash)


def compute_score_batch(data_sources: Sequence[str], solution_strs: Sequence[str], ground_truths: Sequence[Any],
                        extra_infos: Optional[Sequence[dict]] = None, **kwargs) -> list[dict]:
    """One verifier call per task in the batch (math items judged together, code run together)."""
    groups = defaultdict(list)
    infos = list(extra_infos) if extra_infos is not None else [None] * len(solution_strs)
    for i, ds in enumerate(data_sources):
        opts = _options(kwargs, infos[i])
        groups[(task_of(ds), tuple(sorted(opts.items())))].append(i)
    out: list[Optional[dict]] = [None] * len(solution_strs)
    for (task, opts), idx in groups.items():
        ver = shared_verifier(task, **dict(opts))
        for i, v in zip(idx, ver.verify_batch([ground_truths[i] for i in idx], [solution_strs[i] for i in idx])):
            out[i] = _result(v, ver.version_hash)
    return out  # type: ignore[return-value]


default_compute_score = compute_score
