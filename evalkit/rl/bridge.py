"""The one place that knows how a task scores: (task, docs, completions) -> the task's own samples.

Every reward in ``evalkit.rl`` goes through ``score_with_task``, so when the Task API changes
(issue 15: a generation task's ``score`` returns values only and the framework builds samples)
only this module adapts. It also names, per task, which of its metrics is *the* reward and how
to read a reason off the task's scored sample.

The tasks score with ``RunContext(num_fewshot=0)``: ``score`` rebuilds the prompt for the sample,
and the zero-shot prompt needs no few-shot split (the prompt plays no part in any verdict).
"""
from __future__ import annotations

from typing import Sequence

from evalkit.taskapi.requests import Completion
from evalkit.taskapi.task import Doc, RunContext

#: the tasks evalkit.rl verifies -> the registered task that scores a completion. MMLU and GPQA
#: evaluate by loglikelihood; a trainer's completion is text, so their chain-of-thought variants score it.
SCORING_TASK = {
    "gsm8k": "gsm8k", "gsm8k_cot": "gsm8k_cot", "math": "math", "math500": "math500",
    "mmlu": "mmlu_cot", "mmlu_cot": "mmlu_cot", "gpqa_diamond": "gpqa_diamond_cot",
    "gpqa_diamond_cot": "gpqa_diamond_cot", "humaneval": "humaneval", "mbpp": "mbpp",
    "mbpp_sanitized": "mbpp_sanitized",
}
#: the metric that is the reward, per scoring task (``metric=`` picks another of the task's metrics)
PRIMARY_METRIC = {
    "gsm8k": "exact_match_numeric", "gsm8k_cot": "exact_match_numeric", "math": "math_verify",
    "math500": "math_verify", "mmlu_cot": "acc", "gpqa_diamond_cot": "acc", "humaneval": "pass@1",
    "mbpp": "pass@1", "mbpp_sanitized": "pass@1",
}
KIND = {"gsm8k": "number", "gsm8k_cot": "number", "math": "math", "math500": "math", "mmlu_cot": "letter",
        "gpqa_diamond_cot": "letter", "humaneval": "code", "mbpp": "code", "mbpp_sanitized": "code"}


def configure(task, metric: str) -> None:
    """Per-verifier settings of the scoring task. MATH: when the reward is ``math_verify`` the workers
    judge only that (minerva's sympy ``exact_match``, ~5x slower, is then None in ``metrics``)."""
    if KIND.get(task.name) == "math" and metric == "math_verify":
        from evalkit.scoring.math_equivalence import judge_math_verify
        task.judge_fn = judge_math_verify


def scoring_context(seed: int, chat: bool) -> RunContext:
    return RunContext(seed=seed, num_fewshot=0, apply_chat_template=chat)


def score_with_task(task, docs: Sequence[Doc], texts: Sequence[str], ctx: RunContext,
                    finish_reason: str = "stop") -> list[dict]:
    """One completion per doc through the task's ``score_all``, as the runner scores a generation
    (one generate request, answered by one completion). Returns per item
    ``{"metrics", "extracted", "detail"}``; ``detail`` is what the reason is read from."""
    responses = [[[Completion(t, finish_reason)]] for t in texts]
    samples = task.score_all(list(docs), responses, ctx)
    task.__dict__.pop("_prompt_cache", None)  # score_all built prompts for the samples; drop them
    out = []
    for s in samples:
        detail = dict(s.extra)
        if "results" in detail:  # code tasks: the one completion's sandbox verdict
            detail = {k: v for k, v in detail["results"][0].items() if k != "traceback"}
        out.append({"metrics": dict(s.metrics), "extracted": s.extracted, "detail": detail, "target": s.target})
    return out


def reason_of(kind: str, reward: float, item: dict) -> str:
    """A short human reason for a verdict, read off the task's sample."""
    ext, det = item["extracted"], item["detail"]
    if reward >= 1.0:
        return "correct"
    if kind == "number":
        pred = ext["strict"] if ext["strict"] != "[invalid]" else ext["flexible"]
        return "no number found" if pred == "[invalid]" else f"wrong answer {pred!r} (gold {item['target']!r})"
    if kind == "math":
        if det.get("judge_status", "ok") != "ok":
            return f"not judged: {det['judge_status']}"
        return "no answer found" if ext.get("answer") is None else f"wrong answer {str(ext['answer'])[:80]!r}"
    if kind == "letter":
        first = ext[0] if isinstance(ext, list) else ext
        return "no 'Answer: X' line" if first["letter"] is None else f"wrong letter {first['letter']}"
    if kind == "code":
        msg = (det.get("error_message") or "")[:120]
        return f"{det.get('status')}: {det.get('error_type') or ''} {msg}".strip()
    return "wrong"
