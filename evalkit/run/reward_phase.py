"""The reward phase of a run with ``--reward-model``: every sampled completion of the generation
tasks is judged twice, by the task's verifier (correct or not, and the answer it votes for) and by
the reward model (a reward), and ``evalkit.scoring.best_of_n`` turns both into pass@1, maj@N, oracle
pass@N, RM best-of-N and the RM's AUROC.

Rewards go through the engine with the reward backend: deduped, cached by the reward model's
identity and resumable (a run killed in this phase recomputes neither the samples nor the rewards
it already has). The reward model sees the task's question without few-shot examples
(``doc.query``) as the user turn and the completion as the assistant turn, rendered with the
reward model's own chat template.

With a process reward model (``--reward-args pooling=step`` on vLLM, or any ``step_agg=``) each
completion gets per-step rewards (the completion cut at blank lines) and ``step_agg`` (``min`` by
default, ``last`` or ``product``; ``evalkit.scoring.step_agg``) makes them one score for RM best-of-N and
the AUROC; the step rewards stay in the samples (``best_of_n.step_rewards``).
"""
from __future__ import annotations

import re
from typing import Optional

from evalkit.scoring import best_of_n
from evalkit.run.engine import Engine
from evalkit.records import ModelInfo
from evalkit.taskapi.requests import RewardRequest
from evalkit.scoring.step_agg import DEFAULT_STEP_AGG, aggregate_steps
from evalkit.scoring.votes import vote_of

REWARD_PROMPT = "doc.query (the question without few-shot examples) as the user turn, the completion as the assistant's"


def verdicts(task, docs, texts_per_doc, ctx) -> Optional[tuple[list, list, str]]:
    """(correct per completion, votes per completion, the verifier's metric) per doc, or None when
    evalkit has no verifier for the task."""
    from evalkit.rl import bridge
    if task.name not in bridge.PRIMARY_METRIC:
        return None
    metric, kind = bridge.PRIMARY_METRIC[task.name], bridge.KIND[task.name]
    flat_docs = [d for d, texts in zip(docs, texts_per_doc) for _ in texts]
    flat_texts = [t for texts in texts_per_doc for t in texts]
    items = bridge.score_with_task(task, flat_docs, flat_texts, ctx) if flat_texts else []
    correct, votes, i = [], [], 0
    for texts in texts_per_doc:
        chunk = items[i:i + len(texts)]
        i += len(texts)
        correct.append([1.0 if (it["metrics"].get(metric) or 0) >= 1 - 1e-9 else 0.0 for it in chunk])
        votes.append([vote_of(kind, it["extracted"]) for it in chunk])
    return correct, votes, metric


def add_best_of_n(plan, entries: dict, rows: dict, reward_backend, cache, progress=True) -> dict:
    """Adds ``best_of_n`` to each generation task's entry (and its figures at full N to the task's
    metrics) and ``best_of_n`` to each sample row. Returns the record's ``reward_model`` block."""
    steps = reward_backend.per_step()
    agg = (reward_backend.step_agg or DEFAULT_STEP_AGG) if steps else None
    jobs = []
    for tr in plan.task_runs:
        if tr.task.output_type != "generate":
            continue
        texts = [list(r["responses"]) for r in rows[tr.task.name]]
        v = verdicts(tr.task, tr.docs, texts, plan.ctx)
        if v is None:
            entries[tr.task.name].best_of_n = {"skipped": f"evalkit has no verifier for task {tr.task.name}"}
            continue
        reqs = [[RewardRequest.pair(d.query, t, steps=steps) for t in ts] for d, ts in zip(tr.docs, texts)]
        jobs.append((tr, texts, v, reqs))
    engine = Engine(reward_backend, cache, progress=progress)
    answers = engine.run([r for *_, reqs in jobs for rs in reqs for r in rs])
    for tr, texts, (correct, votes, metric), reqs in jobs:
        name = tr.task.name
        problems = [{"correct": c, "votes": v, "rewards": [answers[r.key()] for r in rs]}
                    for c, v, rs in zip(correct, votes, reqs)]
        if steps:  # one score per completion from its step rewards; the step rewards stay in the samples
            for p in problems:
                p["step_rewards"] = p["rewards"]
                p["rewards"] = [aggregate_steps(x, agg) for x in p["step_rewards"]]
        best_of_n.attach(entries[name], rows[name], problems, plan.config.seed, name,
                         verifier_metric=metric, reward_prompt=REWARD_PROMPT, step_agg=agg)
    info = ModelInfo(spec=getattr(reward_backend, "record_spec", reward_backend.spec), name=reward_backend.display_name,
                     backend=reward_backend.name, args=dict(getattr(reward_backend, "record_args", {})),
                     identity=reward_backend.identity(),
                     identity_hash=reward_backend.identity_hash()).to_dict()
    return {**info, "pooling": reward_backend.pooling_info(), "engine": dict(engine.stats),
            # per-step rewards (a process reward model) and how they became one score per completion
            "per_step": steps, "step_agg": agg,
            # conversations longer than the reward model's context, scored on their last tokens
            "inputs_cut": int(reward_backend.stats.get("reward_inputs_cut", 0))}
