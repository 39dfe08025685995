"""BFCL v4's single-turn data: where it lives, how its files are read, what a record must hold.

The questions and possible answers ship in the PyPI package ``bfcl-eval`` (Apache-2.0) under
``bfcl_eval/data/``: ``BFCL_v4_<category>.json`` (JSON Lines despite the name: ``id``, ``question``
= a list of turns, each a list of ``{role, content}`` messages, ``function`` = the function docs)
and ``possible_answer/BFCL_v4_<category>.json`` (``id``, ``ground_truth`` = a list of
``{function name: {parameter: [accepted values]}}``). Irrelevance and relevance categories have no
possible answers. evalkit reads these files itself: install the package with ``pip install
--no-deps bfcl-eval`` (its pinned stack is not needed; only its folder is found, through
``importlib.util.find_spec``, never imported), or point ``--data bfcl_<category>=PATH`` at that
``data/`` folder or at one question file (its answers are then read from the ``possible_answer/``
folder beside it).

Every record keeps its file and line: a malformed one fails with one line naming file, line and
field, in the question file or in the answer file.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator, Optional

from evalkit.taskapi.data import DataError, Record, installed_package_path, jsonl_records

PREFIX = "BFCL_v4_"
#: BFCL v4's single-turn categories, as its leaderboard groups them (constants/category_mapping.py)
NON_LIVE = ("simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple",
            "irrelevance")
LIVE = ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple", "live_irrelevance",
        "live_relevance")
CATEGORIES = NON_LIVE + LIVE
INSTALL_HINT = "pip install --no-deps bfcl-eval"


def kind_of(category: str) -> str:
    """How BFCL scores a category: "irrelevance" (no call is right), "relevance" (any call is
    right) or "ast" (the calls are checked against the possible answers)."""
    if "irrelevance" in category:
        return "irrelevance"
    if "relevance" in category:
        return "relevance"
    return "ast"


def language_of(category: str) -> str:
    """The language BFCL decodes and type-checks a category's answers in (utils.is_java / is_js)."""
    if "javascript" in category:
        return "javascript"
    if "java" in category:
        return "java"
    return "python"


def installed_data_dir() -> Optional[Path]:
    """``bfcl_eval/data`` of the installed ``bfcl-eval`` package, found without importing it."""
    return installed_package_path("bfcl_eval", "data")


def default_data_dir(task: str) -> Path:
    d = installed_data_dir()
    if d is None:
        raise DataError(f"task {task}: BFCL's data comes with the PyPI package bfcl-eval, which is not installed: "
                        f"{INSTALL_HINT} (or pass --data {task}=PATH, the data/ folder of BFCL)")
    return d


def category_files(path: Path, category: str) -> tuple[Path, Optional[Path]]:
    """(question file, possible-answer file or None) of a category under ``path`` (the data folder
    or the question file itself)."""
    name = f"{PREFIX}{category}.json"
    if path.is_file() and path.name != name and path.name.startswith(PREFIX):
        raise DataError(f"{path}: this is the file of BFCL category {path.stem[len(PREFIX):]}, not {category} "
                        f"(expected {name}, or the data/ folder)")
    questions = path if path.is_file() else path / name
    if not questions.is_file():
        raise DataError(f"{path}: no {name} for BFCL category {category} (expected the data/ folder of the "
                        f"bfcl-eval package, or the question file itself)")
    if path.is_file():
        looks_like_bfcl(questions, category)
    if kind_of(category) != "ast":
        return questions, None
    answers = questions.parent / "possible_answer" / questions.name
    if not answers.is_file():
        raise DataError(f"{answers}: no such file (the possible answers of {questions.name})")
    return questions, answers


def looks_like_bfcl(questions: Path, category: str) -> None:
    """A file given as the data: its first record must be a BFCL question (``id``, ``question``,
    ``function``), else one line saying it is not BFCL's format (not a missing answers file)."""
    try:
        first = next(iter(jsonl_records(questions)), None)
    except DataError as e:
        raise DataError(f"{questions}: not a BFCL question file (BFCL's {PREFIX}{category}.json holds one JSON "
                        f"object a line; {str(e).split(': ', 1)[-1]})") from None
    if first is None:
        raise DataError(f"{questions}: empty (expected BFCL's {PREFIX}{category}.json question lines)")
    missing = [k for k in ("id", "question", "function") if k not in first.data]
    if missing:
        raise DataError(f"{first.where}: not a BFCL question file (no {', '.join(repr(k) for k in missing)} field; "
                        f"BFCL's questions are {PREFIX}{category}.json in its data/ folder)")


def read_category(path: Path, category: str) -> Iterator[Record]:
    """The category's records, each with its ``ground_truth`` (AST categories) and ``category``."""
    questions, answers = category_files(Path(path), category)
    truth = read_answers(answers) if answers is not None else None
    seen = set()
    for rec in jsonl_records(questions):
        qid = rec.data.get("id")
        if not isinstance(qid, str) or not qid:
            raise DataError(f"{rec.where}: field 'id' should be a non-empty string, got {qid!r}")
        if qid in seen:
            raise DataError(f"{rec.where}: id {qid!r} appears twice")
        seen.add(qid)
        data = {**rec.data, "category": category}
        if truth is not None:
            if qid not in truth:
                raise DataError(f"{rec.where}: no possible answer with id {qid!r} in {answers}")
            data["ground_truth"] = truth[qid]
        yield Record(data, rec.where)
    if truth is not None and set(truth) - seen:
        extra = sorted(set(truth) - seen)[0]
        raise DataError(f"{answers}: possible answer {extra!r} has no question in {questions}")


def read_answers(path: Path) -> dict:
    """{id: ground_truth} of a possible-answer file, each checked (file and line on error)."""
    out = {}
    for rec in jsonl_records(path):
        qid, gt = rec.data.get("id"), rec.data.get("ground_truth")
        if not isinstance(qid, str) or not qid:
            raise DataError(f"{rec.where}: field 'id' should be a non-empty string, got {qid!r}")
        problem = ground_truth_problem(gt)
        if problem:
            raise DataError(f"{rec.where}: field 'ground_truth' {problem}")
        out[qid] = gt
    return out


def ground_truth_problem(gt) -> Optional[str]:
    """What is wrong with a ``ground_truth`` value (None when it has BFCL's shape)."""
    if not isinstance(gt, list) or not gt:
        return "should be a non-empty list of {function: {parameter: [values]}}"
    for i, call in enumerate(gt):
        if not isinstance(call, dict) or len(call) != 1:
            return f"[{i}] should be an object with exactly one function name"
        (name, params), = call.items()
        if not isinstance(params, dict):
            return f"[{i}].{name} should map parameters to lists of accepted values"
        for p, values in params.items():
            if not isinstance(values, list):
                return f"[{i}].{name}.{p} should be a list of accepted values, got {type(values).__name__}"
    return None


def function_problem(functions) -> Optional[str]:
    """What is wrong with a ``function`` value (None when it has BFCL's shape)."""
    if not isinstance(functions, list):
        return "should be a list of function docs"
    for i, f in enumerate(functions):
        if not isinstance(f, dict) or not isinstance(f.get("name"), str):
            return f"[{i}] should be an object with a string 'name'"
        params = f.get("parameters")
        if not isinstance(params, dict) or not isinstance(params.get("properties"), dict):
            return f"[{i}] ({f['name']}) should have 'parameters' with an object 'properties'"
        if not all(isinstance(p, dict) and isinstance(p.get("type"), str) for p in params["properties"].values()):
            return f"[{i}] ({f['name']}): every parameter needs a string 'type'"
    return None


def question_problem(question) -> Optional[str]:
    """What is wrong with a single-turn ``question`` value (None when it has BFCL's shape)."""
    if not isinstance(question, list) or not question or not isinstance(question[0], list) or not question[0]:
        return "should be a list of turns, the first a non-empty list of messages"
    for i, m in enumerate(question[0]):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            return f"[0][{i}] should be a message with string 'role' and 'content'"
    return None


def reader(categories: Iterable[str]):
    """A ``DataSource.local_reader`` over the given categories, in order."""
    categories = tuple(categories)

    def read(path: Path, split: str) -> Iterator[Record]:
        for c in categories:
            yield from read_category(path, c)
    return read

