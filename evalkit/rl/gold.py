"""Gold data for a reward: the task's own dataset record, rebuilt into the task's ``Doc``.

A gold value is one of
- a dict: the dataset record as the task reads it (``{"question", "answer"}`` for GSM8K, the MATH
  problem JSON, the HumanEval / MBPP record with its tests); ``evalkit export-rl`` writes these;
- a JSON string of such a dict (what travels through verl's parquet ``ground_truth``, TRL dataset
  columns and OpenRLHF's ``labels``);
- a plain answer string for the answer-matching tasks: GSM8K ``"72"`` (or a worked solution ending
  ``#### 72``), MATH ``"\\frac{1}{2}"`` (or a worked solution with a ``\\boxed{}``), MMLU ``"B"``.
  Code tasks and GPQA (whose prompt shows a seeded permutation of the choices) need the record.
An unusable gold raises ``GoldError``; the adapters turn it into a ``None`` reward (skip the item).
"""
from __future__ import annotations

import json
import threading
from collections import Counter, OrderedDict
from typing import Any

from evalkit.taskapi.data import FieldError
from evalkit.taskapi.task import Doc


class GoldError(ValueError):
    """The gold data cannot be turned into the task's doc."""


def shorthand_record(task_name: str, answer: str) -> dict:
    if task_name in ("gsm8k", "gsm8k_cot"):
        return {"question": "", "answer": answer}
    if task_name in ("math", "math500"):
        if "\\boxed" in answer or "\\fbox" in answer:  # a worked solution (TRL's `solution` columns)
            return {"problem": "", "solution": answer, "type": "unknown"}
        return {"problem": "", "solution": f"$\\boxed{{{answer}}}$", "answer": answer, "type": "unknown"}
    if task_name == "mmlu_cot":
        return {"subject": "miscellaneous", "question": "", "choices": ["", "", "", ""], "answer": answer}
    raise GoldError(f"task {task_name} needs the dataset record as gold (a dict or its JSON), got a plain string")


def as_record(task_name: str, gold: Any) -> dict:
    if isinstance(gold, dict):
        return gold
    if isinstance(gold, (bytes, bytearray)):
        gold = gold.decode("utf-8", "replace")
    if isinstance(gold, (int, float)) and not isinstance(gold, bool):
        gold = str(gold)
    if not isinstance(gold, str) or not gold.strip():
        raise GoldError(f"gold should be a record, its JSON or an answer string, got {type(gold).__name__}")
    s = gold.strip()
    if s.startswith("{"):
        try:
            obj = json.loads(s)
        except json.JSONDecodeError as e:
            raise GoldError(f"gold looks like JSON but does not parse: {e.msg} at char {e.pos}") from None
        if not isinstance(obj, dict):
            raise GoldError("gold JSON should be an object")
        return obj
    return shorthand_record(task_name, s)


class DocBuilder:
    """Gold -> the task's Doc via ``task.record_to_doc``, memoised (a GRPO group shares its gold)."""

    def __init__(self, task, task_name: str, size: int = 4096):
        self.task, self.task_name, self.size = task, task_name, size
        self._memo: OrderedDict[str, Doc] = OrderedDict()
        self._lock = threading.Lock()

    def doc(self, gold: Any) -> Doc:
        record = as_record(self.task_name, gold)
        key = json.dumps(record, sort_keys=True, default=str)
        with self._lock:
            if key in self._memo:
                self._memo.move_to_end(key)
                return self._memo[key]
            self.task.__dict__.setdefault("_counters", Counter())  # MMLU numbers docs per subject
            try:
                doc = self.task.record_to_doc(record, 0)
            except FieldError as e:
                raise GoldError(f"gold record for {self.task_name}: {e}") from None
            except KeyError as e:
                raise GoldError(f"gold record for {self.task_name}: field {e.args[0]!r} is missing") from None
            except (TypeError, ValueError, AttributeError) as e:
                raise GoldError(f"gold record for {self.task_name}: {e}") from None
            if doc is None:
                raise GoldError(f"gold record is not an item of {self.task_name}")
            self._memo[key] = doc
            if len(self._memo) > self.size:
                self._memo.popitem(last=False)
            return doc
