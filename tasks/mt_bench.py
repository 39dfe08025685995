"""MT-Bench (Zheng et al. 2023): 80 two-turn questions in 8 categories, graded by an LLM judge.

Run it with ``evalkit mt-bench --model ... --judge ...`` (or ``evalkit arena run --prompts mt_bench``
for pairwise battles); ``evalkit run`` cannot, because the second turn is generated after the first
and a judge model grades both (see evalkit.judges.mt_bench). This file holds the data side:

* questions: FastChat's ``question.jsonl`` (``question_id``, ``category``, ``turns``, optional
  ``reference``) from a local folder or file (``--data``), else the hub copy ``lighteval/mt-bench``;
* references for math, reasoning and coding (FastChat's ``NEED_REF_CATS``): ``gpt-4`` (default,
  FastChat's ``reference_answer/gpt-4.jsonl``, 30 answers, as the leaderboard used them), or
  ``corrected``: the human-written ``reference`` field of question.jsonl, which fixes GPT-4's
  known mistakes (e.g. question 111: GPT-4 says the triangle's area is 0, it is 3); it covers 29 of
  the 30 questions, 123 keeps GPT-4's answer. Or a file of your own in model_answer format;
* sampling temperature per category, as FastChat's gen_model_answer.py sets it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from evalkit.taskapi.data import DataError, DataSource, FieldError, read_records, require
from evalkit.scoring.metric import Metric
from evalkit.taskapi.task import Doc, Task, register_task

NEED_REF_CATS = ("math", "reasoning", "coding")
# fastchat/llm_judge/common.py temperature_config; other categories sample at 0.7
TEMPERATURE = {"writing": 0.7, "roleplay": 0.7, "extraction": 0.0, "math": 0.0, "coding": 0.0,
               "reasoning": 0.0, "stem": 0.1, "humanities": 0.1}
DEFAULT_TEMPERATURE = 0.7
CATEGORIES = tuple(TEMPERATURE)
REFERENCE_SETS = ("gpt-4", "corrected")

MT_BENCH_DATA = DataSource(hub_path="lighteval/mt-bench", hub_splits={"test": "train"},
                           local_files={"test": ["question.jsonl", "question"]})

RUN_HINT = ("mt_bench is graded by a judge model over two dependent turns; run it with "
            "`evalkit mt-bench --model MODEL --judge JUDGE [--data DIR]` (or `evalkit arena run --prompts mt_bench`), "
            "not `evalkit run`")


def temperature_for(doc: Doc) -> float:
    if doc.meta.get("required_temperature") is not None:
        return float(doc.meta["required_temperature"])
    return TEMPERATURE.get(doc.meta["category"], DEFAULT_TEMPERATURE)


@register_task
class MTBench(Task):
    name = "mt_bench"
    description = "MT-Bench: 80 two-turn questions, LLM-judged 1-10 and pairwise (run with `evalkit mt-bench`)"
    version = "1"
    dataset = MT_BENCH_DATA
    eval_split = "test"
    output_type = "judged"
    #: judge scores (1-10) or reward-model rewards, overall and per turn, and the pairwise win rate;
    #: which of them a record holds depends on the grading modes (``evalkit mt-bench --modes``)
    metrics = tuple(Metric(n, required=False) for r in ("score", "reward")
                    for n in (r, f"{r}_turn1", f"{r}_turn2")) + (Metric("win_rate", required=False),)

    def record_to_doc(self, record, index):
        qid = require(record, "question_id", (int, str))
        turns = require(record, "turns", list)
        if not turns or not all(isinstance(t, str) for t in turns):
            raise FieldError("turns", "should be a non-empty list of strings")
        ref = record.get("reference")
        if ref is not None and not (isinstance(ref, list) and all(isinstance(r, str) for r in ref)):
            raise FieldError("reference", "should be a list of strings")
        meta = {"category": require(record, "category"), "turns": list(turns), "reference": ref or None}
        if record.get("required_temperature") is not None:
            meta["required_temperature"] = float(record["required_temperature"])
        return Doc(id=str(qid), query=turns[0], target=ref or None, meta=meta)

    def eval_docs(self):
        raise ValueError(RUN_HINT)

    def questions(self) -> list[Doc]:
        return self.load_docs(self.eval_split)

    def requests(self, doc, ctx):
        raise ValueError(RUN_HINT)


def _reference_file(data_path: Optional[str]) -> Path:
    if data_path is None:
        raise DataError("the gpt-4 references live in FastChat's reference_answer/gpt-4.jsonl: pass --data with "
                        "the MT-Bench folder (question.jsonl, reference_answer/), or --references corrected")
    p = Path(data_path)
    folder = p.parent if p.is_file() else p
    f = folder / "reference_answer" / "gpt-4.jsonl"
    if not f.is_file():
        raise DataError(f"{f}: no such file (needed for --references gpt-4)")
    return f


def read_answer_turns(path: Path) -> dict[str, list[str]]:
    out = {}
    for rec in read_records(path):
        try:
            out[str(rec.data["question_id"])] = list(rec.data["choices"][0]["turns"])
        except (KeyError, IndexError, TypeError):
            raise DataError(f"{rec.where}: expected FastChat model_answer fields question_id and choices[0].turns")
    return out


def load_references(docs: list[Doc], which: str = "gpt-4", data_path: Optional[str] = None) -> tuple[dict, dict]:
    """References for the questions whose category needs one: ({question id: [turn refs]}, info)."""
    need = [d for d in docs if d.meta["category"] in NEED_REF_CATS]
    info = {"set": which, "n": 0, "fallback_to_gpt4": []}
    if not need:
        return {}, info
    if which == "gpt-4":
        path = _reference_file(data_path)
        table = read_answer_turns(path)
        info["file"] = str(path)
    elif which == "corrected":
        table = {d.id: d.meta["reference"] for d in need if d.meta.get("reference")}
        lacking = [d.id for d in need if d.id not in table]
        if lacking:
            gpt4 = read_answer_turns(_reference_file(data_path))
            for qid in lacking:
                if qid in gpt4:
                    table[qid] = gpt4[qid]
                    info["fallback_to_gpt4"].append(qid)
    else:
        path = Path(which)
        if not path.is_file():
            raise DataError(f"--references {which!r}: expected gpt-4, corrected or a model_answer JSONL file")
        table = read_answer_turns(path)
        info["file"] = str(path)
    refs = {}
    for d in need:
        ref = table.get(d.id)
        if not ref:
            raise DataError(f"references ({which}): none for question {d.id} ({d.meta['category']})")
        turns = len(d.meta["turns"])
        refs[d.id] = list(ref) + [""] * (turns - len(ref))
    info["n"] = len(refs)
    return refs, info
