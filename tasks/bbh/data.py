"""BIG-Bench Hard data: the 27 subtasks, their items, and the paper's chain-of-thought prompt files.

Items come from the hub dataset lm-eval reads (``SaylorTwift/bbh``: one config per subtask, split
``test``, rows ``{input, target}``, stored as ``<subtask>/test-00000-of-00001.parquet``) or from a
local folder in either layout:

- the paper's repository (github.com/suzgunmirac/BIG-Bench-Hard): ``bbh/<subtask>.json`` holding
  ``{"canary": ..., "examples": [{"input", "target"}, ...]}``, with ``cot-prompts/<subtask>.txt``;
- the hub dataset's files: ``<subtask>/test-*.parquet`` (or ``test.jsonl``), with ``cot-prompts/``
  beside them.

The prompts (``cot-prompts/<subtask>.txt``: a canary line, ``-----``, then the task description and
three "Q: ... A: Let's think step by step. ... So the answer is X." exemplars) are in no hub dataset:
both BBH tasks read them from the local folder, byte for byte.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from evalkit.taskapi.data import DataError, DataSource, Provenance, Record, decoded_lines, read_records

HUB_PATH = "SaylorTwift/bbh"
SUBTASKS = (
    "boolean_expressions", "causal_judgement", "date_understanding", "disambiguation_qa", "dyck_languages",
    "formal_fallacies", "geometric_shapes", "hyperbaton", "logical_deduction_five_objects",
    "logical_deduction_seven_objects", "logical_deduction_three_objects", "movie_recommendation",
    "multistep_arithmetic_two", "navigate", "object_counting", "penguins_in_a_table",
    "reasoning_about_colored_objects", "ruin_names", "salient_translation_error_detection", "snarks",
    "sports_understanding", "temporal_sequences", "tracking_shuffled_objects_five_objects",
    "tracking_shuffled_objects_seven_objects", "tracking_shuffled_objects_three_objects", "web_of_lies",
    "word_sorting",
)
_PROMPT_HEADER = "-----\n"


@dataclass(frozen=True)
class CoTPrompt:
    """One subtask's prompt file: ``body`` (everything after the ``-----`` line, byte for byte), the
    task ``description`` and the exemplars as (question, chain of thought, final answer)."""

    body: str
    description: str
    exemplars: tuple


def parse_cot_prompt(path: Path) -> CoTPrompt:
    text = "".join(decoded_lines(path))
    if _PROMPT_HEADER not in text:
        raise DataError(f"{path}: no '-----' line after the canary (not a BBH cot-prompts file)")
    body = text.split(_PROMPT_HEADER, 1)[1]
    description, *shots = body.split("\n\nQ: ")
    exemplars = []
    for i, shot in enumerate(shots, 1):
        if "\nA: " not in shot:
            raise DataError(f"{path}: exemplar {i}: no 'A: ' line")
        question, answer = shot.split("\nA: ", 1)
        tail = answer.rstrip("\n").rsplit("So the answer is ", 1)
        if len(tail) != 2 or not tail[1].endswith(".") or "\n" in tail[1]:
            raise DataError(f"{path}: exemplar {i}: does not end with 'So the answer is X.'")
        exemplars.append((question, answer, tail[1][:-1]))
    if not exemplars:
        raise DataError(f"{path}: no 'Q: ' exemplars")
    return CoTPrompt(body, description, tuple(exemplars))


def prompts_folder(root: Optional[str]) -> Path:
    """``cot-prompts/`` in the ``--data`` folder (or beside it, when it names the ``bbh/`` folder)."""
    if root is None:
        raise DataError(f"BBH's cot-prompts are in no hub dataset: pass --data TASK=DIR, DIR holding cot-prompts/ "
                        f"(github.com/suzgunmirac/BIG-Bench-Hard) and the items (bbh/*.json or {HUB_PATH}'s files)")
    root = Path(root)
    for cand in (root / "cot-prompts", root.parent / "cot-prompts"):
        if cand.is_dir():
            return cand
    raise DataError(f"{root}: no cot-prompts/ folder (the paper's <subtask>.txt prompt files)")


def load_prompt(root: Optional[str], subtask: str) -> CoTPrompt:
    path = prompts_folder(root) / f"{subtask}.txt"
    if not path.is_file():
        raise DataError(f"{path}: missing (BBH prompt file of subtask {subtask!r})")
    return parse_cot_prompt(path)


def read_paper_json(path: Path, subtask: str) -> Iterable[Record]:
    """``bbh/<subtask>.json`` of the paper's repository: ``{"examples": [{input, target}, ...]}``."""
    try:
        obj = json.loads("".join(decoded_lines(path)))
    except json.JSONDecodeError as e:
        raise DataError(f"{path}:{e.lineno}: invalid JSON ({e.msg} at column {e.colno})") from None
    rows = obj.get("examples") if isinstance(obj, dict) else None
    if not isinstance(rows, list):
        raise DataError(f"{path}: field 'examples' is missing or not a list (expected the paper's bbh/<subtask>.json)")
    for i, row in enumerate(rows, 1):
        if not isinstance(row, dict):
            raise DataError(f"{path}: examples[{i - 1}]: expected an object, got {type(row).__name__}")
        yield Record({**row, "subtask": subtask}, Provenance(f"{path}:examples", i))


def read_hub_folder(folder: Path, subtask: str) -> Iterable[Record]:
    """A subtask's folder of the hub dataset: ``test-*.parquet`` shards (or ``test.jsonl``/``.json``)."""
    files = sorted(folder.glob("test-*.parquet")) or sorted(folder.glob("test.*"))
    if not files:
        raise DataError(f"{folder}: no test-*.parquet (the layout of {HUB_PATH}) or test.jsonl")
    for f in files:
        for rec in read_records(f):
            yield Record({**rec.data, "subtask": subtask}, rec.where)


def subtask_records(root: Path, subtask: str) -> Iterable[Record]:
    for cand in (root / "bbh" / f"{subtask}.json", root / f"{subtask}.json"):
        if cand.is_file():
            return read_paper_json(cand, subtask)
    if (root / subtask).is_dir():
        return read_hub_folder(root / subtask, subtask)
    raise DataError(f"{root}: no data for BBH subtask {subtask!r} (looked for bbh/{subtask}.json, {subtask}.json "
                    f"and {subtask}/test-*.parquet)")


@dataclass
class BBHSource(DataSource):
    """All (or some) subtasks, from the hub (one config each) or a local folder; every record gets
    its ``subtask``."""

    subtasks: tuple = SUBTASKS

    def _load_local(self, path: Path, split: str) -> Iterable[Record]:
        if not path.is_dir():
            raise DataError(f"{path}: BBH wants a folder (bbh/<subtask>.json or <subtask>/test-*.parquet, "
                            "and cot-prompts/)")
        for subtask in self.subtasks:
            yield from subtask_records(path, subtask)

    def _load_hub(self, split: str) -> Iterable[Record]:
        for subtask in self.subtasks:
            one = DataSource(hub_path=self.hub_path, hub_name=subtask)
            for rec in one._load_hub(split):
                yield Record({**rec.data, "subtask": subtask}, rec.where)


def bbh_source(subtasks: tuple = SUBTASKS) -> BBHSource:
    return BBHSource(hub_path=HUB_PATH, subtasks=tuple(subtasks), data_dir="bbh", licence="MIT")
