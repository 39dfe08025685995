"""Arenas: battles between models judged by a model (or imported), rated, recorded.

``run_arena``: every contestant answers the prompts (MT-Bench's two turns, or a prompts file),
pairs are scheduled, each (pair, prompt, turn) is judged in both orders (disagreement = tie) and
stored as a battle (``prompt_id``, ``model_a``, ``model_b``, ``winner``, ``judge``, and in the
extra fields the turn and both orders' verdicts). Scheduling is all pairs x all prompts, or a
*budget* of matches (pair, prompt) spent in rounds: each round goes to the pairs whose outcome is
least known, ``p(1-p)/(1+n)`` with ``p`` the win probability under the current Bradley-Terry fit
(one virtual tie per pair keeps it finite) and ``n`` the matches the pair has had.

``rate``: Bradley-Terry (or online Elo) ratings with bootstrap CIs and LMArena's CI-overlap ranks,
plus the win-rate and battle-count matrices (``evalkit.arena``). The run record has
``tasks["arena"]["ratings"][model] = {rating, ci_low, ci_high, rank, n_battles, wins, losses, ties,
determined}`` (rating, interval and rank null where ``determined`` is false) and the matrices in
``tasks["arena"]["extra"]``.
"""
from __future__ import annotations

import itertools
import shutil
import time
import warnings
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from evalkit.arena import Battle, BattleTable, compute_bt, write_battles
from evalkit.arena.summary import TASK, arena_entry, rate  # noqa: F401 (rate stays importable here)
from evalkit.arena.stream import sniff_format
from evalkit.taskapi.data import DataError, read_records
from evalkit.records import ModelInfo, TaskEntry, new_run, write_run
from evalkit.taskapi.task import Doc
from evalkit.tasks.mt_bench import MTBench, load_references

from .contestants import BackendPool, Contestant, check_unique, load_answers
from .reward_judge import close_judge, make_judge
from .mt_bench import PairResult, generate_answers, judge_pairs, select_questions
from .templates import TemplateSet

BATTLES_FILE = "battles.jsonl"


@dataclass
class ArenaConfig:
    prompts: str = "mt_bench"         # "mt_bench" or a prompts file (JSONL/JSON/CSV)
    data_path: Optional[str] = None   # MT-Bench folder when prompts == "mt_bench"
    references: str = "gpt-4"
    limit: Optional[int] = None
    question_ids: Optional[list] = None
    max_tokens: int = 1024
    system_prompt: Optional[str] = None
    seed: int = 1234
    budget: Optional[int] = None      # matches (pair, prompt); None = all pairs x all prompts
    round_size: Optional[int] = None  # matches per scheduling round (default: number of pairs)
    method: str = "bt"                # "bt" or "elo"
    rounds: int = 100                 # bootstrap resamples
    anchor: Optional[str] = None
    anchor_rating: float = 1000.0
    tags: list = field(default_factory=list)


# ---- prompts ---------------------------------------------------------------------------------------
def prompt_doc(rec, index: int) -> Doc:
    d = rec.data
    pid = next((d[k] for k in ("question_id", "prompt_id", "id") if d.get(k) is not None), index + 1)
    turns = d.get("turns")
    if turns is None:
        text = next((d[k] for k in ("prompt", "question", "instruction") if isinstance(d.get(k), str)), None)
        turns = [text] if text is not None else None
    if not isinstance(turns, list) or not turns or not all(isinstance(t, str) for t in turns):
        raise DataError(f"{rec.where}: a prompt needs 'turns' (list of strings) or 'prompt' (a string)")
    ref = d.get("reference")
    if isinstance(ref, str):
        ref = [ref]
    if ref is not None and not (isinstance(ref, list) and all(isinstance(r, str) for r in ref)):
        raise DataError(f"{rec.where}: field 'reference' should be a string or a list of strings")
    meta = {"category": str(d.get("category") or "general"), "turns": turns, "reference": ref or None}
    return Doc(id=str(pid), query=turns[0], target=ref, meta=meta)


def load_prompts(cfg: ArenaConfig) -> tuple[list[Doc], dict, dict]:
    """(docs, references by id, reference info)."""
    if cfg.prompts == "mt_bench":
        docs = select_questions(MTBench(data_path=cfg.data_path).questions(), cfg.limit, cfg.question_ids)
        refs, info = load_references(docs, cfg.references, cfg.data_path)
        return docs, refs, info
    docs = [prompt_doc(rec, i) for i, rec in enumerate(read_records(cfg.prompts))]
    ids = Counter(d.id for d in docs)
    dup = [i for i, n in ids.items() if n > 1]
    if dup:
        raise DataError(f"{cfg.prompts}: prompt id(s) {', '.join(dup[:5])} appear more than once")
    docs = select_questions(docs, cfg.limit, cfg.question_ids)
    refs = {d.id: d.meta["reference"] for d in docs if d.meta["reference"]}
    return docs, refs, {"set": "prompts file", "n": len(refs)}


# ---- scheduling --------------------------------------------------------------------------------
class Scheduler:
    """All matches at once, or a budget spent on the most informative pairs round by round."""

    def __init__(self, names: Sequence[str], docs: Sequence[Doc], budget: Optional[int], seed: int,
                 round_size: Optional[int] = None):
        self.pairs = list(itertools.combinations(names, 2))
        self.docs = list(docs)
        self.rng = np.random.default_rng(seed)
        self.order = {p: [self.docs[i] for i in self.rng.permutation(len(self.docs))] for p in self.pairs}
        self.used = Counter()
        self.budget = budget
        self.round_size = max(1, round_size or len(self.pairs))
        self.spent = 0

    def next_round(self, battles: Sequence[Battle]) -> list[tuple]:
        if self.budget is None:
            if self.spent:
                return []
            self.spent = len(self.pairs) * len(self.docs)
            return [(a, b, d) for d in self.docs for a, b in self.pairs]
        left = self.budget - self.spent
        open_pairs = [p for p in self.pairs if self.used[p] < len(self.docs)]
        if left <= 0 or not open_pairs:
            return []
        k = min(left, self.round_size)
        out = []
        for p in self._pick(open_pairs, battles, k):
            out.append((p[0], p[1], self.order[p][self.used[p]]))
            self.used[p] += 1
        self.spent += len(out)
        return out

    def _pick(self, open_pairs, battles, k: int) -> list:
        """k matches, one at a time, each to the pair with the most information left, counting
        the matches already given out this round (so one uncertain pair can get several)."""
        prior = [Battle(None, a, b, "tie") for a, b in self.pairs]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = compute_bt(list(battles) + prior)
        tiebreak = {p: float(x) for p, x in zip(open_pairs, self.rng.random(len(open_pairs)))}
        extra = Counter()
        chosen = []
        for _ in range(k):
            live = [p for p in open_pairs if self.used[p] + extra[p] < len(self.docs)]
            if not live:
                break

            def info(p):
                prob = 1.0 / (1.0 + 10 ** ((r[p[1]] - r[p[0]]) / 400))
                return prob * (1 - prob) / (1 + self.used[p] + extra[p])
            best = min(live, key=lambda p: (-info(p), tiebreak[p]))
            extra[best] += 1
            chosen.append(best)
        return chosen


# ---- the record ---------------------------------------------------------------------------------
def arena_record(summary: dict, battles: Sequence[Battle] | BattleTable, source: dict, config: dict,
                 contestants: list, judge: Optional[dict] = None, timings: Optional[dict] = None,
                 engine: Optional[dict] = None) -> dict:
    models = summary["order"]
    entry = TaskEntry.from_dict(arena_entry(summary, battles, source))
    fingerprint = entry.dataset_fingerprint
    model = ModelInfo(spec=",".join(models), name=f"arena({len(models)} models)", backend="arena",
                      identity={"models": models, "battles": fingerprint}, identity_hash=fingerprint)
    config_block = {"tasks": [TASK], "seed": config.get("seed"), "tags": config.get("tags", []), "arena": config,
                    "contestants": contestants}
    run = new_run("arena", model, config_block, {TASK: entry}, label=f"arena-{len(models)}-models", judge=judge,
                  engine=engine or {}, timings=timings or {})
    return run.to_dict()


def write_arena(output_dir: str, run: dict, battles: Sequence[Battle] | BattleTable,
                samples: Optional[list] = None) -> str:
    """Write the run and keep its battles beside it: ``Battle`` objects as JSONL, a table read
    from files as a copy of those files (JSON Lines concatenated, one JSON or parquet file
    as is), so ``load_battles`` reads back the very battles that were rated."""
    rows = {TASK: samples} if samples is not None else {}
    if samples is not None:
        run["tasks"][TASK]["samples_file"] = f"samples_{TASK}.jsonl"
    name = BATTLES_FILE
    if isinstance(battles, BattleTable) and len(battles.paths) == 1:
        kind = sniff_format(battles.paths[0])
        name = {"json": "battles.json", "parquet": "battles.parquet"}.get(kind, BATTLES_FILE)
    run["tasks"][TASK]["battles_file"] = name
    path = write_run(output_dir, run, rows)
    dest = Path(path) / name
    if not isinstance(battles, BattleTable):
        write_battles(dest, battles)
    elif len(battles.paths) == 1:
        shutil.copyfile(battles.paths[0], dest)
    elif battles.paths and all(sniff_format(p) == "jsonl" for p in battles.paths):
        _concat_jsonl(battles.paths, dest)
    else:
        write_battles(dest, battles.to_battles())
    run["path"] = str(path)
    return str(path)


def _concat_jsonl(paths: Sequence[str], dest: Path) -> None:
    with open(dest, "wb") as out:
        for p in paths:
            with open(p, "rb") as fh:
                head = fh.read(3)
                if head != b"\xef\xbb\xbf":
                    out.write(head)
                last = head[-1:]
                for block in iter(lambda: fh.read(1 << 20), b""):
                    out.write(block)
                    last = block[-1:]
            if last not in (b"", b"\n"):
                out.write(b"\n")


# ---- the judged arena --------------------------------------------------------------------------
def run_arena(contestants: list[Contestant], judge_spec: str, cfg: ArenaConfig, cache,
              output_dir: Optional[str] = "results", templates: Optional[TemplateSet] = None,
              model_args: Optional[dict] = None, judge_args: Optional[dict] = None,
              judge_options: Optional[dict] = None, progress=False) -> dict:
    t0 = time.time()
    check_unique(contestants)
    if len(contestants) < 2:
        raise ValueError("an arena needs at least two models (--models a,b[,c...] and/or --answers FILE)")
    if cfg.budget is not None and cfg.budget < 1:
        raise ValueError("--budget must be >= 1")
    templates = templates or TemplateSet()
    docs, refs, ref_info = load_prompts(cfg)
    ids = {d.id for d in docs}
    answers = {c.name: load_answers(c.answers_file, ids) for c in contestants if c.imported}
    pool = BackendPool(cache, model_args, progress)
    by_name = {c.name: c for c in contestants}
    engines, answered = {}, {c.name: set(ids) for c in contestants if c.imported}
    try:
        judge = make_judge(pool, judge_spec, judge_args, cache, cfg.seed, progress, judge_options)
        sched = Scheduler([c.name for c in contestants], docs, cfg.budget, cfg.seed, cfg.round_size)
        results: list[PairResult] = []
        battles: list[Battle] = []
        t_answers = 0.0
        while True:
            matches = sched.next_round(battles)
            if not matches:
                break
            ta = time.time()
            for name in dict.fromkeys(m for a, b, _ in matches for m in (a, b)):
                c = by_name[name]
                need = list({d.id: d for a, b, d in matches
                             if name in (a, b) and d.id not in answered.get(name, set())}.values())
                if c.imported or not need:
                    continue
                eng = engines.setdefault(name, pool.engine(c.spec))
                answers.setdefault(name, {}).update(
                    generate_answers(eng, c, need, cfg.seed, cfg.max_tokens, cfg.system_prompt))
                answered.setdefault(name, set()).update(d.id for d in need)
            t_answers += time.time() - ta
            new = judge_pairs(judge, templates, matches, answers, refs)
            results += new
            battles += [p.battle(judge.name) for p in new if p.winner is not None]
        judge_info = judge.describe()
    finally:
        pool.close()
        close_judge(locals().get("judge"))
    from .reliability import pairwise_figures
    figures = pairwise_figures(results)
    summary = rate(battles, cfg.method, cfg.rounds, cfg.seed, cfg.anchor, cfg.anchor_rating) if battles else None
    prompts = cfg.prompts if cfg.prompts != "mt_bench" else f"mt_bench:{cfg.data_path or MTBench.dataset.hub_path}"
    source = {"prompts": prompts,
              "references": ref_info, "n_matches": sched.spent, "n_judged_pairs": len(results),
              "unresolved_pairs": figures["unresolved_pairs"],
              "judge_reliability": figures, "templates": templates.describe()}
    timings = {"answers_s": round(t_answers, 3), "total_s": round(time.time() - t0, 3)}
    if summary is None:
        raise ValueError(f"the judge resolved none of the {len(results)} judged pairs; "
                         f"see --constrain and --judge-retries")
    engine = {"judge": dict(judge.engine.stats), **{n: dict(e.stats) for n, e in engines.items()}}
    run = arena_record(summary, battles, source, asdict(cfg), [c.describe() for c in contestants],
                       {k: judge_info[k] for k in ("spec", "name", "backend", "identity_hash")}, timings, engine)
    samples = [{"doc_id": f"{p.qid}/turn{p.turn}/{p.model_1}|{p.model_2}", **p.to_dict()} for p in results]
    if output_dir:
        write_arena(output_dir, run, battles, samples)
    return {"run": run, "battles": battles, "samples": samples, "pairs": results}
