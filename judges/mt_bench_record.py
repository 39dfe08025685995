"""The MT-Bench run record of one contestant: its answers, judgments, scores and judge figures."""
from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from evalkit.arena import write_battles
from evalkit.records import ModelInfo, new_run, write_run
from evalkit.run.post_process import entry_of
from evalkit.scoring.metric import MetricDeclarationError
from evalkit.taskapi.items import Scored, make_sample
from evalkit.taskapi.task import Doc
from evalkit.tasks.mt_bench import MTBench, temperature_for

from .contestants import Contestant
from .mt_bench_judged import layer_figures
from .mt_bench_scores import pair_counts, summarize
from .reliability import pairwise_figures, single_figures

TASK = "mt_bench"
BATTLES_FILE = "battles_mt_bench.jsonl"


def model_entry(c: Contestant, backend, model_args: dict) -> ModelInfo:
    if c.imported:
        desc = c.describe()
        return ModelInfo(spec=f"answers:{c.answers_file}", name=c.name, backend="imported", identity=desc,
                         identity_hash=desc["answers_sha256"][:32])
    ident = dict(backend.identity())
    if c.gen:
        ident["gen_overrides"] = dict(c.gen)
    spec = c.spec + "".join(f"@{k}={v}" for k, v in c.gen.items())
    return ModelInfo(spec=spec, name=c.name, backend=backend.name, args=model_args or {}, identity=ident,
                     identity_hash=hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:32])


@dataclass
class Graded:
    """One contestant's verdicts: its rating judgments (in call order), every pair judged in the run,
    and its samples' records of the judge layer (``mt_bench_judged.layer_records``)."""

    single: list
    pairs: list
    records: dict = field(default_factory=dict)


def build_record(c, backend, docs, answers, refs, ref_info, graded: Graded, judge, judge_info, templates, cfg,
                 model_args, engine_stats, timings, output_dir) -> dict:
    single, pairs = graded.single, graded.pairs
    by_reward = judge_info.get("kind") == "reward_model"
    metrics, breakdowns, per_q = summarize(docs, single, pairs, c.name, rating="reward" if by_reward else "score")
    by_q = defaultdict(list)
    for j in single:
        by_q[j.meta["qid"]].append({"turn": j.meta["turn"], **j.to_dict()})
    pq = defaultdict(list)
    mine = [p for p in pairs if c.name in (p.model_1, p.model_2)]
    for p in mine:
        pq[p.qid].append(p.to_dict())
    rows, samples = [], []
    for d in docs:
        a = answers[d.id]
        s = make_sample(d, Scored(per_q.get(d.id, {}), extracted={"scores": [j["value"] for j in by_q.get(d.id, [])]},
                                  extra={"category": d.meta["category"], "answer_chars": [len(x) for x in a],
                                         "judgments": by_q.get(d.id, []), "pairwise": pq.get(d.id, []),
                                         **({"judged": graded.records[d.id]} if d.id in graded.records else {})}),
                        prompt=d.meta["turns"], responses=a, target=refs.get(d.id))
        rows.append(s.to_dict())
        samples.append(s)
    task = MTBench()
    task.metric_objects(samples)  # every per-question metric is one the task declares
    undeclared = sorted(set(metrics) - {m["name"] for m in task.declared_metrics()})
    if undeclared:
        raise MetricDeclarationError(f"task {TASK}: metric {', '.join(map(repr, undeclared))} is not declared")
    lengths = {(d.id, t + 1): len(answers[d.id][t]) for d in docs for t in range(len(answers[d.id]))}
    judge_figs = dict(judge_info)
    if single:
        judge_figs["single"] = single_figures(single, [lengths[(j.meta["qid"], j.meta["turn"])] for j in single])
    if mine:
        # lengths seen from this contestant: model_1's answer vs model_2's
        judge_figs["pairwise"] = pairwise_figures(mine)
        judge_figs["pairwise"]["opponents"] = pair_counts(mine, c.name)
    for name, figs in layer_figures(graded.records).items():
        # the judge layer's figures (kind, asks, swap consistency) beside MT-Bench's own
        part = "single" if name == "mt_bench_single" else "pairwise"
        judge_figs[part] = {**figs, **judge_figs.get(part, {})}
    battles = [p.battle(judge.name) for p in mine if p.winner is not None]
    entry = entry_of(
        task, samples, rows, metrics, breakdowns, num_fewshot=0, output_type="judged",
        data_source=cfg.data_path or MTBench.dataset.hub_path,
        config={"name": TASK, "version": MTBench.version, "references": cfg.references, "modes": list(cfg.modes),
                "baseline": cfg.baseline, "max_tokens": cfg.max_tokens, "system_prompt": cfg.system_prompt},
        extra={"judge": judge_figs, "templates": templates.describe(), "references": ref_info,
               "temperatures": {cat: temperature_for(Doc("", "", meta={"category": cat}))
                                for cat in dict.fromkeys(d.meta["category"] for d in docs)},
               "score_note": ("reward = mean reward-model output over every graded turn (not MT-Bench's 1-10 scale); "
                              "CI clustered by question") if by_reward else
                             "score = mean over every graded turn (FastChat's overall); CI clustered by question",
               **({"battles_file": BATTLES_FILE, "n_battles": len(battles)} if mine else {})})
    config = {"tasks": [TASK], "limit": cfg.limit, "seed": cfg.seed, "num_fewshot": 0,
              "apply_chat_template": True, "system_prompt": cfg.system_prompt, "gen_overrides": dict(c.gen),
              "shard": None, "tags": list(cfg.tags), "question_ids": cfg.question_ids, "mt_bench": asdict(cfg)}
    run = new_run("mt_bench", model_entry(c, backend, model_args), config, {TASK: entry},
                  judge={k: judge_info[k] for k in ("spec", "name", "backend", "identity", "identity_hash")},
                  engine=dict(engine_stats), judge_engine=dict(judge.engine.stats), timings=timings)
    if output_dir:
        path = write_run(output_dir, run, {TASK: rows})
        if battles:
            write_battles(Path(path) / BATTLES_FILE, battles)
        run.path = str(path)
    return {"run": run.to_dict(), "samples": rows, "battles": battles}
