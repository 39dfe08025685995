"""Joining shard run records (``evalkit run --shard i/N``) into the record of the unsharded run.

Samples are put back in their unsharded order (``doc_index``) and every metric is recomputed from
them with the same code and seed, so the merged record equals a single-engine run's record in all
but run id, timings and engine counters (which are summed).
"""
from __future__ import annotations

from pathlib import Path

from evalkit.scoring import best_of_n
from evalkit.records import load_run, new_run, write_run
from evalkit.run.config import RunConfig
from evalkit.run.runner import make_task, score_task
from evalkit.taskapi.task import Sample


def _comparable(cfg: dict) -> dict:
    return {k: v for k, v in cfg.items() if k != "shard"}


def _check_same_reward_model(recs) -> None:
    """Shards of a --reward-model run must share the reward model (its identity) and step_agg."""
    def of(r) -> tuple:
        rm = r.data.get("reward_model") or {}
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


def merge_runs(paths: list, output_dir) -> Path:
    recs = [load_run(p) for p in paths]
    if not recs:
        raise ValueError("merge needs at least one shard record")
    first = recs[0].data
    shards = []
    for r in recs:
        d = r.data
        if d["model"].get("identity_hash") != first["model"].get("identity_hash"):
            raise ValueError(f"{r.path}: a different model than {recs[0].path}; shards must share one model")
        if _comparable(d["config"]) != _comparable(first["config"]):
            raise ValueError(f"{r.path}: run config differs from {recs[0].path} (tasks, limit, seed, prompts...)")
        if not d["config"].get("shard"):
            raise ValueError(f"{r.path}: not a shard record (run with --shard I/N)")
        shards.append(tuple(d["config"]["shard"]))
    _check_same_reward_model(recs)
    count = shards[0][1]
    if any(n != count for _, n in shards) or sorted(i for i, _ in shards) != list(range(count)):
        raise ValueError(f"shards {sorted(shards)} do not cover 0..{count - 1} exactly once")

    config = RunConfig.from_record(first["config"])
    config.shard = None
    tasks_out, samples_out = {}, {}
    for name in config.tasks:
        rows = [row for r in recs for row in r.samples(name)]
        if any("doc_index" not in row for row in rows):
            raise ValueError(f"task {name}: shard samples lack doc_index (written by an older evalkit)")
        rows.sort(key=lambda row: row["doc_index"])
        samples = [Sample.from_dict(row) for row in rows]
        tasks_out[name], samples_out[name] = score_task(make_task(name, config), samples, config,
                                                        [row["doc_index"] for row in rows])
        if rows and all(isinstance(row.get("best_of_n"), dict) for row in rows):  # a --reward-model run
            shard_info = recs[0].run.tasks[name].best_of_n or {}
            best_of_n.attach(tasks_out[name], samples_out[name], [row["best_of_n"] for row in rows], config.seed,
                             name, **{k: shard_info[k] for k in ("verifier_metric", "reward_prompt", "step_agg")
                                      if k in shard_info})

    engine, timings = {}, {}
    for r in recs:
        for k, v in r.data.get("engine", {}).items():
            engine[k] = engine.get(k, 0) + v
        for k, v in r.data.get("timings", {}).items():
            timings[k] = round(max(timings.get(k, 0), v), 3)  # shards run side by side: wall = slowest
    head = recs[0].run
    run = new_run("evaluation", head.model, {**first["config"], "shard": None}, tasks_out, versions=head.versions,
                  git_sha=head.git_sha, engine=engine, timings=timings, merged_from=[r.run_id for r in recs],
                  reward_model=recs[0].data.get("reward_model"))
    return write_run(output_dir, run, samples_out)
