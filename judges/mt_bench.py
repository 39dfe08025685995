"""MT-Bench end to end: answers (generated in two passes, or imported), judged, aggregated, recorded.

Generation follows FastChat's gen_model_answer.py: every question's first turn goes to the model
as one chat (one engine pass for all questions), then the second turn with the model's own first
answer in the conversation (a second pass); the chat template is the model's; temperature per
category (``evalkit.tasks.mt_bench.TEMPERATURE``), greedy at 0, seeded otherwise; answers stripped.

Grading follows gen_judgment.py: single grading rates turn 1 with ``single-v1`` (``single-math-v1``
with the reference for math, reasoning, coding) and turn 2 with the multi-turn forms; pairwise
grading judges each (question, turn) in both orders and a disagreement is a tie.

Scores: FastChat's figures (turn 1, turn 2, overall = mean over all graded turns) plus what it
never published: a 95% CI for each, per category too, clustered by question (a question's two
turns are not independent). Judge reliability (parse failures, swap disagreement, length
correlation) goes under ``tasks["mt_bench"]["extra"]["judge"]``.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import itertools
import json
import math
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
from scipy import stats as sps

from evalkit.arena import Battle, write_battles
from evalkit.records import SCHEMA_VERSION, write_run
from evalkit.requests import GenerateRequest, GenParams
from evalkit.runner import git_sha, package_versions, run_id_for
from evalkit.stats import MetricValue, derive_seed, mean_metric
from evalkit.task import Doc, Sample, content_hash
from evalkit.tasks.mt_bench import MTBench, load_references, temperature_for

from .contestants import BackendPool, Contestant, check_unique, load_answers
from .judge import Judge, JudgeCall, Judgment
from .reliability import combine_orders, pairwise_figures, single_figures
from .templates import TemplateSet

TASK = "mt_bench"
BATTLES_FILE = "battles_mt_bench.jsonl"


@dataclass
class MTBenchConfig:
    data_path: Optional[str] = None
    limit: Optional[int] = None
    question_ids: Optional[list] = None
    references: str = "gpt-4"
    max_tokens: int = 1024            # FastChat's max_new_token for answers
    seed: int = 1234
    system_prompt: Optional[str] = None
    modes: tuple = ("single",)        # "single" and/or "pairwise"
    baseline: Optional[str] = None    # pairwise against this contestant (else all pairs)
    tags: list = field(default_factory=list)


# ---- questions and answers ------------------------------------------------------------------------
def select_questions(docs: list[Doc], limit: Optional[int] = None, ids: Optional[Sequence] = None) -> list[Doc]:
    if ids:
        by_id = {d.id: d for d in docs}
        missing = [str(i) for i in ids if str(i) not in by_id]
        if missing:
            raise ValueError(f"--questions: no question(s) {', '.join(missing)} in the data")
        docs = [by_id[str(i)] for i in ids]
    return docs[:limit] if limit is not None else docs


def load_questions(cfg: MTBenchConfig) -> list[Doc]:
    return select_questions(MTBench(data_path=cfg.data_path).questions(), cfg.limit, cfg.question_ids)


def gen_params(c: Contestant, doc: Doc, turn: int, cfg_seed: int, max_tokens: int) -> GenParams:
    temp = float(c.gen.get("temperature", temperature_for(doc)))
    seed = None
    if temp > 0:
        seed = derive_seed(cfg_seed, c.gen.get("seed", ""), TASK, "answer", doc.id, turn) % (2 ** 31)
    return GenParams(max_tokens=int(c.gen.get("max_tokens", max_tokens)), temperature=temp,
                     top_p=float(c.gen.get("top_p", 1.0)), seed=seed)


def generate_answers(engine, c: Contestant, docs: Sequence[Doc], seed: int, max_tokens: int,
                     system_prompt: Optional[str] = None) -> dict[str, list[str]]:
    """Answer every turn of every doc, one engine pass per turn (turn k sees answers 1..k-1)."""
    answers = {d.id: [] for d in docs}
    history = {d.id: ((("system", system_prompt),) if system_prompt else ()) for d in docs}
    for t in range(max((len(d.meta["turns"]) for d in docs), default=0)):
        reqs = {}
        for d in docs:
            if t < len(d.meta["turns"]):
                msgs = history[d.id] + (("user", d.meta["turns"][t]),)
                reqs[d.id] = GenerateRequest(messages=msgs, params=gen_params(c, d, t + 1, seed, max_tokens))
        out = engine.run(list(reqs.values()))
        for qid, r in reqs.items():
            text = out[r.key()][0].text.strip()
            answers[qid].append(text)
            history[qid] = r.messages + (("assistant", text),)
    return answers


# ---- judge calls -----------------------------------------------------------------------------------
def _refs(ref: Optional[list]) -> dict:
    return {"ref_answer_1": ref[0], "ref_answer_2": ref[1] if len(ref) > 1 else ""} if ref else {}


def single_calls(templates: TemplateSet, docs: Sequence[Doc], answers: dict, refs: dict, model: str) -> list[JudgeCall]:
    calls = []
    for d in docs:
        q, a, ref = d.meta["turns"], answers[d.id], refs.get(d.id)
        meta = {"qid": d.id, "model": model, "category": d.meta["category"]}
        calls.append(JudgeCall(templates.pick("single", bool(ref), False),
                               {"question": q[0], "answer": a[0], **_refs(ref)}, {**meta, "turn": 1}))
        if len(q) > 1:
            calls.append(JudgeCall(templates.pick("single", bool(ref), True),
                                   {"question_1": q[0], "question_2": q[1], "answer_1": a[0], "answer_2": a[1],
                                    **_refs(ref)}, {**meta, "turn": 2}))
    return calls


def _pair_values(d: Doc, a: list, b: list, turn: int) -> dict:
    q = d.meta["turns"]
    if turn == 1:
        return {"question": q[0], "answer_a": a[0], "answer_b": b[0]}
    return {"question_1": q[0], "question_2": q[1], "answer_a_1": a[0], "answer_a_2": a[1],
            "answer_b_1": b[0], "answer_b_2": b[1]}


@dataclass
class PairResult:
    """One (question, turn) judged between model_1 and model_2 in both orders."""

    qid: str
    turn: int
    category: str
    model_1: str
    model_2: str
    g1: Judgment      # model_1 shown as assistant A
    g2: Judgment      # model_2 shown as assistant A
    len_1: int
    len_2: int

    @property
    def winner(self) -> Optional[str]:
        return combine_orders(self.g1.value, self.g2.value)

    def battle(self, judge: str) -> Battle:
        w = {"model_1": "model_a", "model_2": "model_b", "tie": "tie"}[self.winner]
        return Battle(prompt_id=self.qid, model_a=self.model_1, model_b=self.model_2, winner=w, judge=judge,
                      extra={"turn": self.turn, "category": self.category, "template": self.g1.template,
                             "g1_verdict": self.g1.value, "g2_verdict": self.g2.value,
                             "g1_source": self.g1.source, "g2_source": self.g2.source})

    def to_dict(self) -> dict:
        return {"qid": self.qid, "turn": self.turn, "model_1": self.model_1, "model_2": self.model_2,
                "winner": self.winner, "g1": self.g1.to_dict(), "g2": self.g2.to_dict()}


def judge_pairs(judge: Judge, templates: TemplateSet, matches: Sequence[tuple], answers: dict,
                refs: dict) -> list[PairResult]:
    """``matches``: (model_1, model_2, doc); every turn of each is judged in both orders, in one batch."""
    calls, slots = [], []
    for m1, m2, d in matches:
        a, b, ref = answers[m1][d.id], answers[m2][d.id], refs.get(d.id)
        for turn in range(1, min(2, len(d.meta["turns"])) + 1):
            t = templates.pick("pairwise", bool(ref), turn == 2)
            meta = {"qid": d.id, "turn": turn, "model_1": m1, "model_2": m2}
            calls.append(JudgeCall(t, {**_pair_values(d, a, b, turn), **_refs(ref)}, {**meta, "order": "g1"}))
            calls.append(JudgeCall(t, {**_pair_values(d, b, a, turn), **_refs(ref)}, {**meta, "order": "g2"}))
            slots.append((m1, m2, d, turn, len(a[turn - 1]), len(b[turn - 1])))
    js = judge.run(calls)
    return [PairResult(d.id, turn, d.meta["category"], m1, m2, js[2 * k], js[2 * k + 1], la, lb)
            for k, (m1, m2, d, turn, la, lb) in enumerate(slots)]


# ---- statistics ------------------------------------------------------------------------------------
def clustered_mean(values: Sequence[float], clusters: Sequence, higher_is_better: bool = True) -> MetricValue:
    """Mean over all values with a cluster-robust standard error (CR1) and a t interval on
    G-1 degrees of freedom, G = number of clusters (questions). With two values per cluster this
    equals the t interval over per-question means."""
    pts = [(float(v), c) for v, c in zip(values, clusters) if v is not None]
    n = len(pts)
    if n == 0:
        return MetricValue(float("nan"), None, None, None, 0, "mean", higher_is_better)
    x = np.array([p[0] for p in pts])
    m = float(x.mean())
    groups = defaultdict(float)
    for v, c in pts:
        groups[c] += v - m
    g = len(groups)
    if g < 2:
        return MetricValue(m, None, None, None, n, "mean", higher_is_better)
    se = math.sqrt(g / (g - 1) * sum(r * r for r in groups.values())) / n
    t = float(sps.t.ppf(0.975, g - 1))
    return MetricValue(m, se, m - t * se, m + t * se, n, "mean", higher_is_better)


OUTCOME = {"model_1": 1.0, "model_2": 0.0, "tie": 0.5}


def outcome_for(p: PairResult, model: str) -> Optional[float]:
    if p.winner is None:
        return None
    o = OUTCOME[p.winner]
    return o if model == p.model_1 else 1.0 - o


def summarize(docs: Sequence[Doc], single: Sequence[Judgment], pairs: Sequence[PairResult], model: str) -> tuple:
    """Metrics, per-category breakdowns and per-question sample metrics for one contestant."""
    metrics, breakdowns = {}, {}
    per_q = defaultdict(dict)
    if single:
        vals = [j.value for j in single]
        qids = [j.meta["qid"] for j in single]
        metrics["score"] = clustered_mean(vals, qids)
        for turn in (1, 2):
            tv = [j.value for j in single if j.meta["turn"] == turn]
            if tv:
                metrics[f"score_turn{turn}"] = mean_metric(tv)
        for cat in dict.fromkeys(d.meta["category"] for d in docs):
            cj = [j for j in single if j.meta["category"] == cat]
            breakdowns[cat] = {"score": clustered_mean([j.value for j in cj], [j.meta["qid"] for j in cj])}
        for j in single:
            per_q[j.meta["qid"]][f"score_turn{j.meta['turn']}"] = j.value
        for qid, m in per_q.items():
            got = [v for k, v in m.items() if v is not None]
            m["score"] = float(np.mean(got)) if got else None
    mine = [p for p in pairs if model in (p.model_1, p.model_2)]
    if mine:
        metrics["win_rate"] = clustered_mean([outcome_for(p, model) for p in mine], [p.qid for p in mine])
        for qid in dict.fromkeys(p.qid for p in mine):
            got = [outcome_for(p, model) for p in mine if p.qid == qid]
            got = [v for v in got if v is not None]
            per_q[qid]["win_rate"] = float(np.mean(got)) if got else None
        cats = {d.id: d.meta["category"] for d in docs}
        for cat in dict.fromkeys(cats[p.qid] for p in mine):
            cp = [p for p in mine if cats[p.qid] == cat]
            breakdowns.setdefault(cat, {})["win_rate"] = clustered_mean([outcome_for(p, model) for p in cp],
                                                                        [p.qid for p in cp])
    return metrics, breakdowns, per_q


def pair_counts(pairs: Sequence[PairResult], model: str) -> dict:
    out = defaultdict(lambda: {"win": 0, "loss": 0, "tie": 0, "unresolved": 0})
    for p in pairs:
        if model not in (p.model_1, p.model_2):
            continue
        other = p.model_2 if model == p.model_1 else p.model_1
        o = outcome_for(p, model)
        key = "unresolved" if o is None else "win" if o == 1.0 else "loss" if o == 0.0 else "tie"
        out[other][key] += 1
    return dict(out)


# ---- the run ---------------------------------------------------------------------------------------
def model_entry(c: Contestant, backend, model_args: dict) -> dict:
    if c.imported:
        desc = c.describe()
        return {"spec": f"answers:{c.answers_file}", "name": c.name, "backend": "imported", "args": {},
                "identity": desc, "identity_hash": desc["answers_sha256"][:32]}
    ident = dict(backend.identity())
    if c.gen:
        ident["gen_overrides"] = dict(c.gen)
    spec = c.spec + "".join(f"@{k}={v}" for k, v in c.gen.items())
    return {"spec": spec, "name": c.name, "backend": backend.name, "args": model_args or {}, "identity": ident,
            "identity_hash": hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:32]}


def run_mt_bench(contestants: list[Contestant], judge_spec: str, cfg: MTBenchConfig, cache,
                 output_dir: Optional[str] = "results", templates: Optional[TemplateSet] = None,
                 model_args: Optional[dict] = None, judge_args: Optional[dict] = None,
                 judge_options: Optional[dict] = None, progress=False) -> list[dict]:
    """Answer, judge and record; returns one ``{"run", "samples", "battles"}`` per recorded contestant."""
    t0 = time.time()
    check_unique(contestants)
    if not contestants:
        raise ValueError("nothing to judge: give --model and/or --answers")
    modes = tuple(cfg.modes)
    if "pairwise" in modes:
        if len(contestants) < 2:
            raise ValueError("pairwise grading needs two contestants (e.g. --model X --answers gpt-3.5-turbo.jsonl)")
        if cfg.baseline and cfg.baseline not in {c.name for c in contestants}:
            names = ", ".join(c.name for c in contestants)
            raise ValueError(f"--baseline {cfg.baseline!r} is not a contestant ({names})")
    templates = templates or TemplateSet()
    docs = load_questions(cfg)                      # data errors before any model loads
    refs, ref_info = load_references(docs, cfg.references, cfg.data_path)
    ids = {d.id for d in docs}
    answers = {c.name: load_answers(c.answers_file, ids) for c in contestants if c.imported}
    pool = BackendPool(cache, model_args, progress)
    engines = {}
    try:
        for c in contestants:
            if not c.imported:
                engines[c.name] = pool.engine(c.spec)
                answers[c.name] = generate_answers(engines[c.name], c, docs, cfg.seed, cfg.max_tokens,
                                                   cfg.system_prompt)
        t_gen = time.time()
        judge = Judge(pool.backend(judge_spec, judge_args), cache, judge_spec, seed=cfg.seed, progress=progress,
                      **(judge_options or {}))
        single = {}
        if "single" in modes:
            calls = [call for c in contestants for call in single_calls(templates, docs, answers[c.name], refs, c.name)]
            for j in judge.run(calls):
                single.setdefault(j.meta["model"], []).append(j)
        pairs: list[PairResult] = []
        if "pairwise" in modes:
            names = [c.name for c in contestants]
            duel = ([(n, cfg.baseline) for n in names if n != cfg.baseline] if cfg.baseline
                    else list(itertools.combinations(names, 2)))
            pairs = judge_pairs(judge, templates, [(a, b, d) for a, b in duel for d in docs], answers, refs)
        t_judge = time.time()
        judge_info = judge.describe()
        out = []
        for c in contestants:
            if not single.get(c.name) and not any(c.name in (p.model_1, p.model_2) for p in pairs):
                continue
            if "single" not in modes and cfg.baseline == c.name:
                continue
            backend = None if c.imported else pool.backend(c.spec)
            out.append(_record(c, backend, docs, answers[c.name], refs, ref_info, single.get(c.name, []), pairs,
                               judge, judge_info, templates, cfg, model_args,
                               engines[c.name].stats if c.name in engines else {},
                               {"answers_s": round(t_gen - t0, 3), "judge_s": round(t_judge - t_gen, 3),
                                "total_s": round(time.time() - t0, 3)}, output_dir))
        return out
    finally:
        pool.close()


def _record(c, backend, docs, answers, refs, ref_info, single, pairs, judge, judge_info, templates, cfg,
            model_args, engine_stats, timings, output_dir) -> dict:
    metrics, breakdowns, per_q = summarize(docs, single, pairs, c.name)
    by_q = defaultdict(list)
    for j in single:
        by_q[j.meta["qid"]].append({"turn": j.meta["turn"], **j.to_dict()})
    pq = defaultdict(list)
    mine = [p for p in pairs if c.name in (p.model_1, p.model_2)]
    for p in mine:
        pq[p.qid].append(p.to_dict())
    rows = []
    for d in docs:
        a = answers[d.id]
        s = Sample(d.id, d.hash(), d.meta["turns"], a, refs.get(d.id), per_q.get(d.id, {}),
                   extracted={"scores": [j["value"] for j in by_q.get(d.id, [])]},
                   extra={"category": d.meta["category"], "answer_chars": [len(x) for x in a],
                          "judgments": by_q.get(d.id, []), "pairwise": pq.get(d.id, [])})
        rows.append(s.to_dict())
    lengths = {(d.id, t + 1): len(answers[d.id][t]) for d in docs for t in range(len(answers[d.id]))}
    judge_figs = dict(judge_info)
    if single:
        judge_figs["single"] = single_figures(single, [lengths[(j.meta["qid"], j.meta["turn"])] for j in single])
    if mine:
        # lengths seen from this contestant: model_1's answer vs model_2's
        judge_figs["pairwise"] = pairwise_figures(mine)
        judge_figs["pairwise"]["opponents"] = pair_counts(mine, c.name)
    battles = [p.battle(judge.name) for p in mine if p.winner is not None]
    entry = {
        "version": MTBench.version, "description": MTBench.description, "output_type": "judged",
        "config": {"name": TASK, "version": MTBench.version, "references": cfg.references, "modes": list(cfg.modes),
                   "baseline": cfg.baseline, "max_tokens": cfg.max_tokens, "system_prompt": cfg.system_prompt},
        "num_fewshot": 0, "n_docs": len(docs),
        "dataset_fingerprint": content_hash(sorted((d.id, d.hash()) for d in docs)),
        "prompt_hash": content_hash([r["prompt_hash"] for r in rows]),
        "data_source": cfg.data_path or MTBench.dataset.hub_path,
        "metrics": {k: v.to_dict() for k, v in metrics.items()},
        "breakdowns": {g: {k: v.to_dict() for k, v in ms.items()} for g, ms in breakdowns.items()},
        "samples_file": f"samples_{TASK}.jsonl",
        "extra": {"judge": judge_figs, "templates": templates.describe(), "references": ref_info,
                  "temperatures": {cat: temperature_for(Doc("", "", meta={"category": cat}))
                                   for cat in dict.fromkeys(d.meta["category"] for d in docs)},
                  "score_note": "score = mean over every graded turn (FastChat's overall); CI clustered by question",
                  **({"battles_file": BATTLES_FILE, "n_battles": len(battles)} if mine else {})},
    }
    run = {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id_for(c.name),
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "model": model_entry(c, backend, model_args),
        "judge": {k: judge_info[k] for k in ("spec", "name", "backend", "identity", "identity_hash")},
        "config": {"tasks": [TASK], "limit": cfg.limit, "seed": cfg.seed, "num_fewshot": 0,
                   "apply_chat_template": True, "system_prompt": cfg.system_prompt, "gen_overrides": dict(c.gen),
                   "shard": None, "tags": list(cfg.tags), "question_ids": cfg.question_ids,
                   "mt_bench": asdict(cfg)},
        "tasks": {TASK: entry},
        "versions": package_versions(),
        "git_sha": git_sha(),
        "engine": dict(engine_stats),
        "judge_engine": dict(judge.engine.stats),
        "timings": timings,
    }
    if output_dir:
        path = write_run(output_dir, run, {TASK: rows})
        if battles:
            write_battles(Path(path) / BATTLES_FILE, battles)
        run["path"] = str(path)
    return {"run": run, "samples": rows, "battles": battles}
