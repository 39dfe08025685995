"""MT-Bench end to end: answers (generated in two passes, or imported), judged, aggregated, recorded.

Generation follows FastChat's gen_model_answer.py: every question's first turn goes to the model
as one chat (one engine pass for all questions), then the second turn with the model's own first
answer in the conversation (a second pass); the chat template is the model's; temperature per
category (``evalkit.tasks.mt_bench.TEMPERATURE``), greedy at 0, seeded otherwise; answers stripped.

Grading follows gen_judgment.py: single grading rates turn 1 with ``single-v1`` (``single-math-v1``
with the reference for math, reasoning, coding) and turn 2 with the multi-turn forms; pairwise
grading judges each (question, turn) in both orders and a disagreement is a tie.

Scores (``mt_bench_scores``): FastChat's figures plus question-clustered 95% CIs, per category
too. The record (``mt_bench_record``) puts judge reliability (parse failures, swap disagreement,
length correlation) under ``tasks["mt_bench"]["extra"]["judge"]``.
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

from evalkit.taskapi.requests import GenerateRequest, GenParams
from evalkit.scoring.stats import derive_seed
from evalkit.scoring.thinking import separate
from evalkit.taskapi.task import Doc
from evalkit.tasks.mt_bench import MTBench, load_references, temperature_for

from .contestants import BackendPool, Contestant, check_unique, load_answers
from .reward_judge import close_judge, make_judge
from .judge import Judge, JudgeCall
from .mt_bench_judged import PairGrade, SingleGrade, layer_records
from .mt_bench_record import BATTLES_FILE, TASK, Graded, build_record, model_entry  # noqa: F401 (re-exported)
from .mt_bench_scores import (  # noqa: F401 (re-exported)
    OUTCOME,
    PairResult,
    clustered_mean,
    outcome_for,
    pair_counts,
    summarize,
)
from .templates import TemplateSet


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
            c0 = out[r.key()][0]  # a reasoning model's trace is not its answer (nor the next turn's history)
            text = separate(c0.text, finish_reason=c0.finish_reason, field_trace=c0.trace, field_open=c0.trace_open
                            ).answer.strip()
            answers[qid].append(text)
            history[qid] = r.messages + (("assistant", text),)
    return answers


# ---- judge calls -----------------------------------------------------------------------------------
def single_calls(templates: TemplateSet, docs: Sequence[Doc], answers: dict, refs: dict, model: str) -> list[JudgeCall]:
    """Every turn of ``model``'s answers to rate: the judge layer's ``SingleGrade`` asks."""
    grade = SingleGrade(templates, refs)
    return [c for d in docs for c in grade.calls(d, answers[d.id], {"model": model})]


def judge_pairs(judge: Judge, templates: TemplateSet, matches: Sequence[tuple], answers: dict,
                refs: dict) -> list[PairResult]:
    """``matches``: (model_1, model_2, doc); every turn of each is judged in both orders (the judge
    layer's ``PairGrade`` asks), in one batch."""
    grade = PairGrade(templates, refs)
    calls, slots = [], []
    for m1, m2, d in matches:
        a, b = answers[m1][d.id], answers[m2][d.id]
        calls += grade.calls(d, (a, b), {"model_1": m1, "model_2": m2})
        slots += [(m1, m2, d, turn, len(a[turn - 1]), len(b[turn - 1]))
                  for turn in range(1, min(2, len(d.meta["turns"])) + 1)]
    js = judge.run(calls)
    return [PairResult(d.id, turn, d.meta["category"], m1, m2, js[2 * k], js[2 * k + 1], la, lb)
            for k, (m1, m2, d, turn, la, lb) in enumerate(slots)]


# ---- the run ---------------------------------------------------------------------------------------
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
        judge = make_judge(pool, judge_spec, judge_args, cache, cfg.seed, progress, judge_options)
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
        records = layer_records(templates, refs, docs, answers, single, pairs)  # the judge layer's, per sample
        out = []
        for c in contestants:
            if not single.get(c.name) and not any(c.name in (p.model_1, p.model_2) for p in pairs):
                continue
            if "single" not in modes and cfg.baseline == c.name:
                continue
            backend = None if c.imported else pool.backend(c.spec)
            graded = Graded(single.get(c.name, []), pairs, records.get(c.name, {}))
            out.append(build_record(c, backend, docs, answers[c.name], refs, ref_info, graded,
                                    judge, judge_info, templates, cfg, model_args,
                                    engines[c.name].stats if c.name in engines else {},
                                    {"answers_s": round(t_gen - t0, 3), "judge_s": round(t_judge - t_gen, 3),
                                     "total_s": round(time.time() - t0, 3)}, output_dir))
        return out
    finally:
        pool.close()
        close_judge(locals().get("judge"))


