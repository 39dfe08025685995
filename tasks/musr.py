"""MuSR (Sprague et al. 2024, "MuSR: Testing the Limits of Chain-of-thought with Multistep Soft
Reasoning", ICLR; data: the hub dataset ``TAUR-Lab/MuSR``, CC-BY-4.0) as the Open LLM Leaderboard v2
runs it (lm-eval's ``leaderboard_musr_<subtask>``): zero-shot multiple choice over the three
subtasks, murder mysteries (2 suspects), object placements (up to 5 places) and team allocation
(3 allocations).

The prompt is lm-eval's: ``{narrative}\\n\\n{question}\\n\\n1 - {choice}\\n2 - ...\\n\\nAnswer:``; each
option is its text after a space, scored by loglikelihood; ``acc_norm`` (per character, the
leaderboard's figure) and ``acc``. ``musr`` holds the three (ids ``<subtask>-<i>``, ``--limit N``:
the first N of each), reported over items, as the macro mean over subtasks (``acc_norm_macro``) and
per subtask; ``musr_<subtask>`` one of them.

Data: the hub dataset (``datasets.load_dataset("TAUR-Lab/MuSR", split=SUBTASK)``), or with
``--data musr=DIR`` a local copy in the hub's layouts: its CSV files (``murder_mystery.csv``,
``object_placements.csv``, ``team_allocation.csv``), files named after the splits, or the parquet
conversion's ``data/<split>-00000-of-00001.parquet``. Fields: ``narrative``, ``question``,
``choices`` (a list, or its Python text as the CSV holds it), ``answer_choice`` (the right option's
text; ``answer_index`` when it is missing). evalkit does nothing differently from lm-eval here.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from evalkit.scoring import subtasks
from evalkit.scoring.metric import Metric
from evalkit.scoring.subtasks import macro_group
from evalkit.taskapi.data import DataError, DataSource, FieldError, Record, read_records, require
from evalkit.taskapi.task import Doc, MultipleChoiceTask, first_of_each_group, register_task

SUBTASKS = ("murder_mysteries", "object_placements", "team_allocation")
CSV_NAMES = {"murder_mysteries": "murder_mystery.csv"}


def _split_file(root: Path, split: str) -> Path:
    for cand in (root / CSV_NAMES.get(split, f"{split}.csv"), *(root / f"{split}{e}" for e in (".csv", ".jsonl",
                 ".json", ".parquet")), root / "data" / f"{split}-00000-of-00001.parquet",
                 *sorted((root / "data").glob(f"{split}-*.parquet"))):
        if cand.is_file():
            return cand
    raise DataError(f"{root}: no file for MuSR split {split!r} (expected {CSV_NAMES.get(split, split + '.csv')}, "
                    f"{split}.jsonl or data/{split}-00000-of-00001.parquet)")


def reader(names):
    def read(path: Path, split: str) -> Iterable[Record]:
        if path.is_file():
            raise DataError(f"{path}: MuSR wants the dataset folder (one file per subtask), not one file")
        for name in names:
            for rec in read_records(_split_file(path, name)):
                yield Record({**rec.data, "subtask": name}, rec.where)
    return read


@dataclass
class MuSRSource(DataSource):
    """The hub dataset's subtasks are its splits: each is loaded and its records labelled."""

    names: tuple = SUBTASKS

    def _load_hub(self, split: str) -> Iterable[Record]:
        for name in self.names:
            for rec in super()._load_hub(name):
                yield Record({**rec.data, "subtask": name}, rec.where)


def source(names) -> MuSRSource:
    return MuSRSource(hub_path="TAUR-Lab/MuSR", local_reader=reader(names), names=tuple(names), licence="CC-BY-4.0")


def parse_choices(value) -> list:
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise FieldError("choices", "should be a list of options (or its Python text)") from None
    if hasattr(value, "tolist"):
        value = value.tolist()
    if not isinstance(value, list) or len(value) < 2 or not all(isinstance(c, str) for c in value):
        raise FieldError("choices", f"should be a list of at least two strings, got {value!r}"[:200])
    return value


@register_task
class MuSR(MultipleChoiceTask):
    name = "musr"
    description = "MuSR, the leaderboard's 0-shot multiple choice: murder mysteries, object placements, teams"
    version = "1"
    family = "musr"
    subtasks = SUBTASKS
    dataset = source(SUBTASKS)
    eval_split = "test"
    num_fewshot = 0
    metrics = (Metric("acc"), Metric("acc_norm"), macro_group(("acc", "acc_norm")))

    def record_to_doc(self, record, index):
        choices = parse_choices(require(record, "choices", object))
        if "answer_choice" in record and record["answer_choice"] is not None:
            if record["answer_choice"] not in choices:
                raise FieldError("answer_choice", f"{record['answer_choice']!r} is not one of the choices")
            gold = choices.index(record["answer_choice"])
        else:
            gold = require(record, "answer_index", object)
            gold = int(gold) if hasattr(gold, "__index__") and not isinstance(gold, bool) else gold
            if not isinstance(gold, int) or not 0 <= gold < len(choices):
                raise FieldError("answer_index", f"should be an index into the {len(choices)} choices, got {gold!r}")
        numbered = "".join(f"{i + 1} - {c}\n" for i, c in enumerate(choices))
        text = f"{require(record, 'narrative')}\n\n{require(record, 'question')}\n\n{numbered}\nAnswer:"
        subtask = record["subtask"]
        return Doc(id=f"{subtask}-{index}", query=text, choices=choices, gold=gold, target=choices[gold],
                   meta={"subtask": subtask})

    def docs_within_limit(self, docs, limit):
        """``--limit N``: the first N items of each subtask (lm-eval's ``leaderboard_musr`` group)."""
        return first_of_each_group(docs, limit, lambda d: d.meta["subtask"])

    def score(self, doc, responses, ctx):
        s = super().score(doc, responses, ctx)
        s.extra = {**(s.extra or {}), "subtask": doc.meta["subtask"]}
        return s

    def breakdowns(self, samples):
        return subtasks.breakdowns(samples, self.higher_is_better_of)




def _subtask_task(subtask: str) -> type:
    cls = type(f"MuSR_{subtask}", (MuSR,), {
        "name": f"musr_{subtask}", "description": f"MuSR {subtask.replace('_', ' ')}, leaderboard 0-shot MC",
        "subtasks": (subtask,), "dataset": source((subtask,)), "metrics": (Metric("acc"), Metric("acc_norm")),
        "__module__": __name__})
    cls.__qualname__ = cls.__name__
    return register_task(cls)


for _s in SUBTASKS:
    globals()[f"MuSR_{_s}"] = _subtask_task(_s)
