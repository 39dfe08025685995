"""BFCL v4's multi-turn data: the questions, their simulated APIs' function docs, the possible
answers, and the APIs' source code, all read from the ``bfcl-eval`` package's folder (or a copy
given with ``--data``) as BFCL's loaders read them.

A record (``BFCL_v4_multi_turn_<category>.json``, JSON Lines) has ``id``, ``question`` (one list of
messages per user turn; a miss_func turn that adds functions is empty), ``initial_config``
(``{class: scenario}``), ``involved_classes`` and, for miss_func, ``missed_function`` (``{turn:
[names]}``). As BFCL's ``populate_test_cases_with_predefined_functions`` does, the function docs
are the involved classes' files under ``multi_turn_func_doc/``, in order, and a missed function's
doc is taken out of them and offered from its turn on; the offered docs get BFCL's Python hint, the
held-out ones do not (BFCL adds them back after hinting). The possible answer (``ground_truth``) is
per turn a list of call strings. ``excluded_function`` is in the data but BFCL never reads it.

The APIs (``GorillaFileSystem``, ``TradingBot``, ...) are BFCL's own classes from
``eval_checker/multi_turn_eval/func_source_code/`` beside the data folder: their source runs in
evalkit's sandbox (``multi_turn_env``).
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Iterator

from evalkit.taskapi.data import DataError, Record, jsonl_records

from .data import category_files
from .prompt import hinted_functions

MULTI_TURN = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
FUNC_DOC_FILES = {"GorillaFileSystem": "gorilla_file_system", "MathAPI": "math_api", "MessageAPI": "message_api",
                  "TwitterAPI": "posting_api", "TicketAPI": "ticket_api", "TradingBot": "trading_bot",
                  "TravelAPI": "travel_booking", "VehicleControlAPI": "vehicle_control"}
SOURCE_DIR = Path("eval_checker") / "multi_turn_eval" / "func_source_code"


@lru_cache(maxsize=16)
def _func_docs(data_dir: str, class_name: str) -> tuple:
    path = Path(data_dir) / "multi_turn_func_doc" / f"{FUNC_DOC_FILES[class_name]}.json"
    if not path.is_file():
        raise DataError(f"{path}: no such file (the function docs of BFCL's {class_name})")
    return tuple(json.dumps(r.data) for r in jsonl_records(path))


def _check(rec: Record, data: dict) -> None:
    question, classes = data.get("question"), data.get("involved_classes")
    if not isinstance(question, list) or not question or not all(isinstance(t, list) for t in question):
        raise DataError(f"{rec.where}: field 'question' should be a list of turns, each a list of messages")
    if not isinstance(classes, list) or not classes or not all(c in FUNC_DOC_FILES for c in classes):
        raise DataError(f"{rec.where}: field 'involved_classes' should list BFCL's API classes "
                        f"({', '.join(FUNC_DOC_FILES)}), got {classes!r}")
    if not isinstance(data.get("initial_config", {}), dict):
        raise DataError(f"{rec.where}: field 'initial_config' should be an object {{class: scenario}}")
    for turn, names in (data.get("missed_function") or {}).items():
        if not str(turn).isdigit() or int(turn) >= len(question) or question[int(turn)]:
            raise DataError(f"{rec.where}: field 'missed_function' names turn {turn!r}, which is not an empty "
                            "turn of the question")


def read_category(path: Path, category: str) -> Iterator[Record]:
    """The category's records with ``function`` (hinted docs), ``missed_function`` ({turn: docs}),
    ``ground_truth``, ``category`` and ``data_dir``."""
    questions, answers = category_files(Path(path), category)
    truth = {}
    for rec in jsonl_records(answers):
        gt = rec.data.get("ground_truth")
        if not (isinstance(gt, list) and all(isinstance(t, list) and all(isinstance(c, str) for c in t) for t in gt)):
            raise DataError(f"{rec.where}: field 'ground_truth' should be a list of turns, each a list of call strings")
        truth[rec.data.get("id")] = gt
    data_dir = str(questions.parent)
    for rec in jsonl_records(questions):
        data = dict(rec.data)
        _check(rec, data)
        qid = data.get("id")
        if qid not in truth:
            raise DataError(f"{rec.where}: no possible answer with id {qid!r} in {answers}")
        if len(truth[qid]) != len(data["question"]):
            raise DataError(f"{answers}: the possible answer of {qid!r} has {len(truth[qid])} turns, the question "
                            f"{len(data['question'])}")
        functions = [json.loads(d) for c in data["involved_classes"] for d in _func_docs(data_dir, c)]
        missed = {}
        for turn, names in (data.get("missed_function") or {}).items():
            missed[str(turn)] = []
            for name in names:
                i = next((i for i, f in enumerate(functions) if f["name"] == name), None)
                if i is None:
                    raise DataError(f"{rec.where}: field 'missed_function' names {name!r}, which no involved class has")
                missed[str(turn)].append(functions.pop(i))
        yield Record({**data, "function": hinted_functions(functions, category), "missed_function": missed,
                      "ground_truth": truth[qid], "category": category, "data_dir": data_dir}, rec.where)


def reader(categories):
    categories = tuple(categories)

    def read(path: Path, split: str) -> Iterator[Record]:
        for c in categories:
            yield from read_category(path, c)
    return read


def api_sources(data_dir: str, classes) -> list:
    """``[(module, source)]`` of BFCL's API modules the classes need, ``long_context`` first."""
    src = Path(data_dir).parent / SOURCE_DIR
    names = ["long_context"] + sorted({FUNC_DOC_FILES[c] for c in classes})
    out = []
    for name in names:
        path = src / f"{name}.py"
        if not path.is_file():
            raise DataError(f"{path}: no such file: BFCL's multi-turn APIs are read from the bfcl-eval package's "
                            f"{SOURCE_DIR} beside its data/ folder ({data_dir})")
        out.append((name, _read(str(path))))
    return out


@lru_cache(maxsize=32)
def _read(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")

