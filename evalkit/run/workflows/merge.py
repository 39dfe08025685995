"""Joining shard run records (``evalkit run --shard i/N``) into the record of the unsharded run.

Samples are put back in their unsharded order (``doc_index``) and every metric is recomputed from
them with the same code and seed, so the merged record equals a single-engine run's record in all
but run id, timings and engine counters (which are summed).
"""
from __future__ import annotations

from evalkit.records import Run, load_run, new_run, write_run
from evalkit.run.config import RunConfig
from evalkit.run.plan import make_task
from evalkit.run.post_process import finish_task, saved_best_of_n
from evalkit.taskapi.task import Sample


def _comparable(cfg: dict) -> dict:
    return {k: v for k, v in cfg.items() if k != "shard"}


def _check_same_reward_model(recs) -> None:
    """Shards of a --reward-model run must share the reward model (its identity) and step_agg."""
    def of(r) -> tuple:
        rm = r.run.reward_model or {}
        return rm.get("identity_hash"), {name: (e.best_of_n or {}).get("step_agg") for name, e in r.run.tasks.items()}
    (ident, aggs), first = of(recs[0]), recs[0].path
    for r in recs[1:]:
        got_ident, got_aggs = of(r)
        if got_ident != ident:
            raise ValueError(f"{r.path}: reward model identity_hash {got_ident} differs from {ident} in {first}; "
                             f"shards must share one reward model")
        for name in sorted(set(aggs) | set(got_aggs)):
            if got_aggs.get(name) != aggs.get(name):
                raise ValueError(f"{r.path}: task {name} best_of_n.step_agg {got_aggs.get(name)} differs from "
                                 f"{aggs.get(name)} in {first}; shards must share one step_agg")


def merge_runs(paths: list, output_dir) -> Run:
    """The merged record (written under ``output_dir``; its folder is ``run.path``, its rows ``run.samples``)."""
    recs = [load_run(p) for p in paths]
    if not recs:
        raise ValueError("merge needs at least one shard record")
    first = recs[0].run
    shards = []
    for r in recs:
        if r.run.model.identity_hash != first.model.identity_hash:
            raise ValueError(f"{r.path}: a different model than {recs[0].path}; shards must share one model")
        if _comparable(r.run.config) != _comparable(first.config):
            raise ValueError(f"{r.path}: run config differs from {recs[0].path} (tasks, limit, seed, prompts...)")
        if not r.run.config.get("shard"):
            raise ValueError(f"{r.path}: not a shard record (run with --shard I/N)")
        shards.append(tuple(r.run.config["shard"]))
    _check_same_reward_model(recs)
    count = shards[0][1]
    if any(n != count for _, n in shards) or sorted(i for i, _ in shards) != list(range(count)):
        raise ValueError(f"shards {sorted(shards)} do not cover 0..{count - 1} exactly once")

    config = RunConfig.from_record(first.config)
    config.shard = None
    tasks_out, samples_out = {}, {}
    for name in config.tasks:
        rows = [row for r in recs for row in r.samples(name)]
        if any("doc_index" not in row for row in rows):
            raise ValueError(f"task {name}: shard samples lack doc_index (written by an older evalkit)")
        rows.sort(key=lambda row: row["doc_index"])
        samples = [Sample.from_dict(row) for row in rows]
        tasks_out[name], samples_out[name] = finish_task(make_task(name, config), samples, config,
                                                         [row["doc_index"] for row in rows])
        saved_best_of_n(tasks_out[name], samples_out[name], rows, first.tasks[name].best_of_n, config, name)

    engine, timings = {}, {}
    for r in recs:
        for k, v in r.run.engine.items():
            engine[k] = engine.get(k, 0) + v
        for k, v in r.run.timings.items():
            timings[k] = round(max(timings.get(k, 0), v), 3)  # shards run side by side: wall = slowest
    run = new_run("evaluation", first.model, {**first.config, "shard": None}, tasks_out, versions=first.versions,
                  git_sha=first.git_sha, engine=engine, timings=timings, merged_from=[r.run_id for r in recs],
                  reward_model=first.reward_model)
    run.path = str(write_run(output_dir, run, samples_out))
    run.samples = samples_out
    return run
