"""One evaluation run, in four phases that every caller composes the same way:

1. ``plan`` (``evalkit.run.plan``): tasks, their docs, the ``RunContext`` and every doc's requests;
   data errors surface here, before any model is loaded.
2. ``answer``: the engine answers all requests of the run at once (deduped, cached, batched).
3. ``score`` (``evalkit.run.score``): each task scores its docs from the answers: ``Sample``s.
4. ``post_process`` (``evalkit.run.post_process``): appended metrics, aggregation into the task's
   record entry and sample rows, generation figures, truncation, reward best-of-N.

``evaluate`` is plan → answer → score → post-process → record; ``parity.collect`` runs the same
phases and keeps the raw answers; ``rescore`` scores saved predictions (no answer phase) and
post-processes them; ``merge`` post-processes the samples of its shards.
"""
from __future__ import annotations

import time
from typing import Optional

from evalkit.records import ModelInfo, Run, new_run, write_run
from evalkit.run.checks import prompts_over_context
from evalkit.run.config import RunConfig
from evalkit.run.engine import Engine
from evalkit.run.roles import Bound
from evalkit.run.plan import Plan, TaskRun, load_tasks, make_task, plan, select_docs, shard_of, task_limit, token_counter
from evalkit.run.post_process import finish_task, post_process
from evalkit.run.score import TaskScores, score, score_docs

__all__ = ["RunConfig", "Plan", "TaskRun", "TaskScores", "plan", "answer", "score", "score_docs", "post_process",
           "finish_task", "score_task", "evaluate", "load_tasks", "make_task", "select_docs", "shard_of", "token_counter",
           "prompts_over_context",
           "task_limit"]

#: one task's entry and rows from its scored samples (phase 4 for one task)
score_task = finish_task


# ---- phase 2: answer --------------------------------------------------------------------------
def answer(p: Plan, backend, cache, progress=True, user_backend=None) -> tuple[dict, dict]:
    """(answers by request key, engine counters). Agent episodes are played after the other requests
    (``evalkit.agents.loop``), their tool calls in a sandbox opened for the run; simulated users
    are played by ``user_backend`` (its own engine, cached under its own identity), else by the model."""
    engine = Engine(backend, cache, progress=progress)
    requests = p.all_requests()
    episodes = [r for r in requests if r.kind == "episode"]
    answers = engine.run([r for r in requests if r.kind != "episode"])
    stats = {}
    if episodes:
        from evalkit.agents import loop as agent_loop
        user_engine = Engine(user_backend, cache, progress=progress) if user_backend is not None else None
        answers.update(agent_loop.play_with_sandbox(episodes, engine, user_engine=user_engine))
        if user_engine is not None:
            stats["user_model"] = dict(user_engine.stats)
    return answers, {**dict(engine.stats), **stats}


def user_model_record(p: Plan, backend, model_spec, user: Optional[Bound]) -> Optional[dict]:
    """The simulated users' model, when the run has episodes with one (the model itself unless given)."""
    if not any(getattr(r, "user_sim", None) is not None for r in p.all_requests()):
        return None
    if user is None:
        return {**model_info(backend, model_spec).to_dict(), "same_as_model": True}
    return model_info(*user).to_dict()


def judge_record(judge: Optional[Bound], judge_stats, second_info) -> Optional[dict]:
    """The judge as the record names it (with the second judge's figures), when it judged anything."""
    if not judge_stats:
        return None
    return {**model_info(*judge).to_dict(), **({"second": second_info} if second_info else {})}


# ---- the whole run ----------------------------------------------------------------------------
def model_info(backend, model_spec: str = "", model_args: Optional[dict] = None) -> ModelInfo:
    runtime = getattr(backend, "runtime_info", dict)()
    return ModelInfo(spec=model_spec, name=backend.display_name, backend=backend.name, args=model_args or {},
                     identity=backend.identity(), identity_hash=backend.identity_hash(),
                     other={"runtime": runtime} if runtime else {})


def evaluate(backend, config: RunConfig, cache, output_dir: Optional[str] = "results",
             model_spec: str = "", model_args: Optional[dict] = None, progress=True,
             task_runs: Optional[list[TaskRun]] = None, *, reward_backend=None, user: Optional[Bound] = None,
             judge: Optional[Bound] = None, second_judge: Optional[Bound] = None) -> Run:
    """Run every task of ``config`` on ``backend``; writes a run record when ``output_dir`` is set.
    ``task_runs`` (from ``load_tasks``) lets a caller load and validate data before the model.
    ``reward_backend`` (a reward model) adds best-of-N figures (``evalkit.run.reward_phase``). The
    other roles are ``evalkit.run.roles.Bound`` (backend, spec, args): ``user`` plays the simulated
    users of agent tasks (τ²-bench; default: the model itself) and is named in the record's
    ``user_model``; ``judge`` answers the tasks' judge requests (``evalkit.run.judge_phase``) and is
    named in the record's ``judge``; ``second_judge`` answers them too, for the judges' agreement,
    and is named in ``judge["second"]``.
    Returns the typed record (``Run``) with its sample rows as ``run.samples`` ({task: rows}) and
    its folder as ``run.path`` when one was written."""
    t0 = time.time()
    p = plan(config, backend, task_runs)
    t_prep = time.time()
    if config.budget_forcing:  # --thinking-budgets: one trace, a forced answer per budget
        from evalkit.run import budget_forcing
        by_budget, forced_info, engine_stats = budget_forcing.run_answers(p, backend, cache, progress)
    else:
        answers, engine_stats = answer(p, backend, cache, progress, user.backend if user else None)
    judge_stats = second_info = None
    if judge is not None and not config.budget_forcing:
        from evalkit.run import judge_phase
        judge_stats = judge_phase.run(p, answers, judge.backend, cache, progress)
        if second_judge is not None and judge_stats:
            second_stats = judge_phase.run(p, answers, second_judge.backend, cache, progress, second=True)
            second_info = {**model_info(*second_judge).to_dict(), "engine": second_stats}
    # after the answers, so a cached rerun needs no tokenizer: counted, warned, recorded per sample
    p.too_long = prompts_over_context(p.task_runs, backend)
    t_model = time.time()
    if config.budget_forcing:
        scored_by = {b: score(p, a, token_counter(backend)) for b, a in by_budget.items()}
        budget_forcing.annotate(p, scored_by, forced_info)
        scored = scored_by[max(scored_by)]
    else:
        scored = score(p, answers, token_counter(backend))
    entries, rows, reward_model = post_process(
        p, scored, reward=(reward_backend, cache, progress) if reward_backend is not None else None)
    if config.budget_forcing:
        budget_forcing.attach(p, entries, scored_by, forced_info,
                              budget_forcing.BudgetForcing.parse(**config.budget_forcing))
    run = new_run("evaluation", model_info(backend, model_spec, model_args), config.to_record(), entries,
                  engine=engine_stats,
                  # backend counters (vllm/openai: share of completions that hit max_tokens, prefix-cache hits)
                  backend_stats=backend.run_stats(),
                  timings={"prepare_s": round(t_prep - t0, 3), "model_s": round(t_model - t_prep, 3),
                           "score_s": round(time.time() - t_model, 3), "total_s": round(time.time() - t0, 3)},
                  reward_model=reward_model,
                  user_model=user_model_record(p, backend, model_spec, user),
                  judge=judge_record(judge, judge_stats, second_info), judge_engine=judge_stats or None)
    if config.suite:  # --suite: its summary (the leaderboard-v2 normalised scores) from the rows
        from evalkit.run.suite_summary import summarize
        run.suite = summarize(config.suite, rows, config.seed)
    if output_dir:
        run.path = str(write_run(output_dir, run, rows))
    run.samples = rows
    return run
