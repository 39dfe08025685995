"""MBPP (Austin et al. 2021): basic Python problems, each a sentence and three assert tests.

``mbpp``: the full set's standard test split (task ids 11-510, 500 problems); ``mbpp_sanitized``:
the hand-verified subset's test split (257 problems, its own reworded texts and tests). The prompt
is the paper's and lm-eval's: 3-shot with problems 2, 3 and 4,

    You are an expert Python programmer, and here is your task: {text} Your code should pass these
    tests:\\n\\n{tests}\\n[BEGIN]\\n{code}\\n[DONE]

shots joined by a blank line; generation stops at ``[DONE]``. Post-processing keeps the code before
``[DONE]``; with markdown, the fenced block when the answer opens with a fence (or came through the
chat template), else the code before the fence that closes it. The program run is that code
followed by the problem's ``test_setup_code`` (full set; lm-eval drops it, so its canonical
MBPP/367 fails) or ``test_imports`` (sanitized) and the asserts, with a 20 s limit per program
(option ``timeout``): the reference solution of MBPP/123 needs ~4-10 s on a loaded 2-core machine.

Data: the hub (``google-research-datasets/mbpp``, ``full``/``sanitized``) or, with ``--data``, the
original ``mbpp.jsonl`` / ``sanitized-mbpp.json`` (a file or their folder); local files are split by
task id as the hub is (prompt 1-10, test 11-510, validation 511-600, train 601-974).
"""
from __future__ import annotations

import ast
import builtins
from pathlib import Path

from evalkit.taskapi.data import DataError, DataSource, read_records, require
from evalkit.taskapi.requests import GenParams
from evalkit.taskapi.task import Doc, register_task
from evalkit.tasks.code import CodeTask, code_part, cut_at_stops, parse, structured_ok

SPLIT_IDS = {"prompt": (1, 10), "test": (11, 510), "validation": (511, 600), "train": (601, 974)}
FEWSHOT_IDS = ("2", "3", "4")  # the paper's prompt examples (lm-eval's too)
TEMPLATE = "You are an expert Python programmer, and here is your task: {text} Your code should pass these tests:\n\n{tests}\n[BEGIN]\n"


def split_reader(*names: str):
    """Reads the original file (or the first of ``names`` in a folder) and keeps ``split``'s task ids."""
    def read(path: Path, split: str):
        if split not in SPLIT_IDS:
            raise DataError(f"{path}: unknown MBPP split {split!r} (have {', '.join(SPLIT_IDS)})")
        if path.is_dir():
            found = [path / n for n in names if (path / n).is_file()]
            if not found:
                raise DataError(f"{path}: none of {', '.join(names)} in this folder")
            path = found[0]
        lo, hi = SPLIT_IDS[split]
        for rec in read_records(path):
            tid = rec.data.get("task_id")
            if not isinstance(tid, int):
                raise DataError(f"{rec.where}: field 'task_id' should be an integer")
            if lo <= tid <= hi:
                yield rec
    return read


def entry_point(tests: list[str], code: str) -> str:
    """The function the tests call: the first called name the reference code defines at top level
    (MBPP/126's is ``sum``, a builtin's name), else the first called non-builtin name."""
    called = []
    for t in tests:
        for node in ast.walk(parse(t)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id not in called:
                called.append(node.func.id)
    try:
        top = {n.name for n in parse(code).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    except SyntaxError:
        top = set()
    for pick in ([c for c in called if c in top], [c for c in called if not hasattr(builtins, c)], called):
        if pick:
            return pick[0]
    raise ValueError("the tests call no function")


@register_task
class MBPP(CodeTask):
    name = "mbpp"
    description = "MBPP full set, test split (ids 11-510): 3-shot [BEGIN]/[DONE] prompts; pass@k in the sandbox"
    version = "1"
    dataset = DataSource(hub_path="google-research-datasets/mbpp", hub_name="full",
                         local_reader=split_reader("mbpp.jsonl", "test.jsonl"), data_dir="mbpp")
    eval_split = "test"
    fewshot_split = "prompt"
    num_fewshot = 3
    target_delimiter = ""
    fewshot_delimiter = "\n\n"
    gen_params = GenParams(max_tokens=512, temperature=0.0, stop=("[DONE]",))
    timeout = 20.0
    text_field = "text"

    def test_code(self, record) -> str:
        setup = record.get("test_setup_code") or ""
        return (setup + "\n" if setup.strip() else "") + "\n".join(record["test_list"]) + "\n"

    def record_to_doc(self, record, index):
        text, code = require(record, self.text_field), require(record, "code")
        tests = require(record, "test_list", list)
        if not tests or not all(isinstance(t, str) for t in tests):
            raise ValueError("field 'test_list' should be a non-empty list of strings")
        entry, test = entry_point(tests, code), self.test_code(record)
        return Doc(id=str(require(record, "task_id", int)), query=TEMPLATE.format(text=text, tests="\n".join(tests)),
                   target=tests, fewshot_target=code + "\n[DONE]",
                   meta={"entry_point": entry, "test": test, "structured": structured_ok(test, entry),
                         "canonical_solution": code})

    def fewshot_examples(self, doc, k, ctx):
        if k <= 0:
            return []
        pool = self.fewshot_pool()
        ordered = [d for i in FEWSHOT_IDS for d in pool if d.id == i] + [d for d in pool if d.id not in FEWSHOT_IDS]
        if len(ordered) < k:
            raise ValueError(f"task {self.name}: {k}-shot asked but the prompt split has {len(ordered)} problems "
                             "(the data must include task ids 1-10)")
        return ordered[:k]

    def candidate(self, doc, completion, chat=False):
        text = cut_at_stops(completion.text, ("[DONE]",))
        if text.lstrip().startswith("[BEGIN]"):
            text = text.lstrip()[len("[BEGIN]"):].lstrip("\n")
        return code_part(text, chat)

    def canonical_prediction(self, doc):
        return doc.meta["canonical_solution"]


@register_task
class MBPPSanitized(MBPP):
    name = "mbpp_sanitized"
    description = "MBPP sanitized (hand-verified) test split, 257 problems: 3-shot prompts; pass@k in the sandbox"
    dataset = DataSource(hub_path="google-research-datasets/mbpp", hub_name="sanitized",
                         local_reader=split_reader("sanitized-mbpp.json", "test.jsonl"), data_dir="mbpp")
    text_field = "prompt"

    def test_code(self, record) -> str:
        imports = [i for i in (record.get("test_imports") or []) if i.strip()]
        return "".join(i + "\n" for i in imports) + "\n".join(record["test_list"]) + "\n"
