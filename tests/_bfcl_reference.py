"""BFCL's own evaluation code, run in a subprocess for tests/tasks/test_bfcl_checker.py.

Reads a JSON request on stdin and writes the answer on stdout. It imports the installed
``bfcl-eval`` package's evaluation modules as they are; three imports that play no part in the
verdicts are stubbed when absent, because bfcl-eval is installed ``--no-deps`` (its pinned stack is
heavy): ``bfcl_eval.constants.model_config`` (the registry of every model handler, which imports
every provider SDK; only ``underscore_to_dot`` of one model is read by the checker: two stand-in
models, ``evalkit-prompt`` without it and ``evalkit-fc`` with it), ``tenacity`` (retry decorators
of API calls) and ``overrides`` (``@final``). Java and JavaScript answers are parsed by BFCL's
tree-sitter parsers, which need the real ``tree-sitter`` packages (without them those parsers are
replaced by ones that raise, and only Python answers are compared).

A request is an object with any of these parts, answered under the same keys:

* ``verdicts``: a list of ``{category, id, text, underscore_to_dot}``:
  each answer text through BFCL's ``_evaluate_single_ast_entry`` (AST categories, with the
  prompt-based handler's ``decode_ast``: ``default_decode_ast_prompting``) or
  ``_evaluate_single_relevance_entry``. Gives ``{valid, error_type}`` or ``{crash: type}``; with
  ``"score_verdicts": true`` also ``verdict_scores``: ``{group: BFCL's summaries of the verdicts of the
  items with that "group"}``.
* ``checks``: a list of ``{category, id, language, calls, underscore_to_dot}``: BFCL's ``ast_checker``
  on already decoded calls.
* ``prompts``: a list of categories: every entry's messages as BFCL's prompt-based handlers send them
  (``load_dataset_entry`` with the language hints, ``system_prompt_pre_processing_chat_model``) and
  its raw entry and possible answer (``load_dataset_entry`` without hints, ``load_ground_truth_entry``),
  and the ``tools`` BFCL's OpenAI-compatible function-calling handler sends (``convert_to_tool``).
* ``scores``: ``{category: {accuracy, total_count}}``: BFCL's summaries
  (``calculate_*_accuracy`` as ``generate_leaderboard_csv`` combines them).
* ``multi_turn``: a list of ``{category, id, result, turns?}`` (``turns``: the entry cut to its first
  turns): BFCL's multi-turn evaluation of each
  (``_evaluate_single_multi_turn_entry`` with the OpenAI function-calling handler's decoding), as
  ``{valid, error_type}``.
* ``multi_turn_prompts``: a list of multi-turn categories: every entry's function docs, held-out
  docs, native ``tools`` and the prompt-based handler's first messages.

The function docs and possible answers of an item are BFCL's own, loaded by its loaders
(``load_dataset_entry`` without the prompt's language hints, as its evaluation does, and
``load_ground_truth_entry``) and looked up by the item's id; they are checked unchanged after
all items ran, so the items are independent.
"""
from __future__ import annotations

import atexit
import copy
import json
import os
import shutil
import sys
import tempfile
import types

if "BFCL_PROJECT_ROOT" not in os.environ:         # BFCL's package wants a project folder; removed at exit
    os.environ["BFCL_PROJECT_ROOT"] = tempfile.mkdtemp(prefix="bfcl_root_")
    atexit.register(shutil.rmtree, os.environ["BFCL_PROJECT_ROOT"], True)


def _stub(name: str, **attrs) -> None:
    try:
        __import__(name)
    except ImportError:
        mod = types.ModuleType(name)
        mod.__dict__.update(attrs)
        sys.modules[name] = mod


class _Config:
    def __init__(self, underscore_to_dot: bool):
        self.underscore_to_dot = underscore_to_dot


_config = types.ModuleType("bfcl_eval.constants.model_config")
_config.MODEL_CONFIG_MAPPING = {"evalkit-prompt": _Config(False), "evalkit-fc": _Config(True)}
sys.modules["bfcl_eval.constants.model_config"] = _config
_stub("tenacity", retry=lambda *a, **k: (lambda f: f), retry_if_exception_message=lambda *a, **k: None,
      retry_if_exception_type=lambda *a, **k: None, wait_random_exponential=lambda *a, **k: None)
_stub("overrides", final=lambda f: f, override=lambda f: f)


def _no_tree_sitter(*args, **kwargs):
    raise RuntimeError("tree-sitter is not installed: BFCL cannot parse Java or JavaScript answers")


for _lang, _grammar, _fn in (("java", "tree_sitter_java", "parse_java_function_call"),
                             ("js", "tree_sitter_javascript", "parse_javascript_function_call")):
    try:  # without tree-sitter only Python answers can be evaluated (the tests skip the others)
        __import__("tree_sitter")
        __import__(_grammar)
    except ImportError:
        _parser = types.ModuleType(f"bfcl_eval.model_handler.parser.{_lang}_parser")
        setattr(_parser, _fn, _no_tree_sitter)
        sys.modules[_parser.__name__] = _parser

from bfcl_eval import utils as bfcl_utils  # noqa: E402
from bfcl_eval.constants.enums import Language, ReturnFormat  # noqa: E402
from bfcl_eval.eval_checker import eval_runner, eval_runner_helper  # noqa: E402
from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker  # noqa: E402
from bfcl_eval.model_handler.utils import default_decode_ast_prompting, system_prompt_pre_processing_chat_model  # noqa: E402
from bfcl_eval.model_handler.utils import convert_to_function_call, convert_to_tool  # noqa: E402
from bfcl_eval.constants.enums import ModelStyle  # noqa: E402
from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI  # noqa: E402


class PromptHandler:
    """What BFCL's evaluation asks of a prompt-based model handler (base_oss_handler.decode_ast)."""

    def decode_ast(self, result, language, has_tool_call_tag):
        return default_decode_ast_prompting(result, language, has_tool_call_tag)


def _language(category: str):
    if bfcl_utils.is_java(category):
        return Language.JAVA, ReturnFormat.JAVA
    if bfcl_utils.is_js(category):
        return Language.JAVASCRIPT, ReturnFormat.JAVASCRIPT
    return Language.PYTHON, ReturnFormat.PYTHON


def _model(item) -> str:
    return "evalkit-fc" if item.get("underscore_to_dot") else "evalkit-prompt"


class Entries:
    """BFCL's own entries (function docs as the checker reads them) and possible answers, by id,
    loaded once per category with its loaders."""

    def __init__(self):
        self.by_id: dict = {}

    def get(self, category: str, qid: str) -> tuple:
        if category not in self.by_id.get("_loaded", ()):
            raw = bfcl_utils.load_dataset_entry(category, include_prereq=False, include_language_specific_hint=False)
            truth = (bfcl_utils.load_ground_truth_entry(category)
                     if not bfcl_utils.is_relevance_or_irrelevance(category) else [None] * len(raw))
            for e, t in zip(raw, truth):
                self.by_id[e["id"]] = (e, t["ground_truth"] if t else None)
            self.by_id.setdefault("_loaded", set()).add(category)
        return self.by_id[qid]

    def fingerprint(self) -> str:
        return json.dumps({k: v for k, v in self.by_id.items() if k != "_loaded"}, sort_keys=True)


ENTRIES = Entries()


def verdict(item: dict) -> dict:
    cat, handler = item["category"], PromptHandler()
    entry, truth = ENTRIES.get(cat, item["id"])
    try:
        if bfcl_utils.is_relevance_or_irrelevance(cat):
            r = eval_runner._evaluate_single_relevance_entry(handler, item["id"], item["text"], entry, _model(item), cat)
        else:
            language, fmt = _language(cat)
            r = eval_runner._evaluate_single_ast_entry(handler, item["id"], item["text"], truth, entry, _model(item),
                                                       cat, language=language, return_format=fmt)
    except Exception as e:  # noqa: BLE001 (BFCL's run would stop here)
        return {"crash": type(e).__name__}
    return {"valid": bool(r["valid"]), "error_type": r.get("error_type", "")}


def check(item: dict) -> dict:
    language = {"python": Language.PYTHON, "java": Language.JAVA, "javascript": Language.JAVASCRIPT}[item["language"]]
    entry, truth = ENTRIES.get(item["category"], item["id"])
    try:
        r = ast_checker(entry["function"], item["calls"], truth, language, item["category"], _model(item))
    except Exception as e:  # noqa: BLE001
        return {"crash": type(e).__name__}
    return {"valid": bool(r["valid"]), "error_type": r.get("error_type", "")}


def prompts(categories: list) -> dict:
    out = {}
    for cat in categories:
        hinted = bfcl_utils.load_dataset_entry(cat, include_prereq=False, include_language_specific_hint=True)
        raw = bfcl_utils.load_dataset_entry(cat, include_prereq=False, include_language_specific_hint=False)
        truth = bfcl_utils.load_ground_truth_entry(cat) if not bfcl_utils.is_relevance_or_irrelevance(cat) else None
        rows = []
        for i, (h, r) in enumerate(zip(hinted, raw)):
            msgs = system_prompt_pre_processing_chat_model(copy.deepcopy(h["question"][0]), h["function"], h["id"])
            # what BFCL's OpenAI-compatible function-calling handler sends as ``tools``
            tools = convert_to_tool(copy.deepcopy(h["function"]), GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)
            rows.append({"id": r["id"], "messages": msgs, "function": r["function"], "tools": tools,
                         "ground_truth": truth[i]["ground_truth"] if truth else None})
        out[cat] = rows
    return out


class FCHandler:
    """What BFCL's multi-turn evaluation asks of an OpenAI-compatible function-calling handler:
    its ``decode_execute`` (openai_completion.py) is ``convert_to_function_call``."""

    def decode_execute(self, result, has_tool_call_tag):
        return convert_to_function_call(result)


def multi_turn(items: list) -> list:
    """BFCL's ``_evaluate_single_multi_turn_entry`` on each ``{category, id, result}`` (``result``:
    per turn, per step, what the FC handler got: a list of ``{name: arguments JSON}`` or a text);
    each item under its own model name, as BFCL keeps API instances in globals by model and entry."""
    out = []
    for k, it in enumerate(items):
        entries = MULTI_TURN_ENTRIES.setdefault(it["category"], {
            e["id"]: e for e in bfcl_utils.load_dataset_entry(it["category"], include_prereq=False)})
        truths = MULTI_TURN_TRUTH.setdefault(it["category"], {
            t["id"]: t["ground_truth"] for t in bfcl_utils.load_ground_truth_entry(it["category"])})
        entry, truth = copy.deepcopy(entries[it["id"]]), truths[it["id"]]
        if "turns" in it:  # the entry cut to its first turns, as a test's data folder has it
            entry["question"], truth = entry["question"][:it["turns"]], truth[:it["turns"]]
        r = eval_runner._evaluate_single_multi_turn_entry(FCHandler(), it["id"], it["result"], truth,
                                                          entry, f"evalkit_item_{k}", it["category"])
        out.append({"valid": bool(r["valid"]),
                    "error_type": "" if r["valid"] else (r["error"].get("error_type") or "")})
    return out


def multi_turn_prompts(categories: list) -> dict:
    """Per category, BFCL's entries as its inference reads them: hinted function docs, held-out
    docs per turn, the FC handler's ``tools``, and the prompt-based handler's first messages."""
    out = {}
    for cat in categories:
        rows = []
        for e in bfcl_utils.load_dataset_entry(cat, include_prereq=False):
            first = system_prompt_pre_processing_chat_model(copy.deepcopy(e["question"][0]), e["function"], e["id"])
            tools = convert_to_tool(copy.deepcopy(e["function"]), GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)
            rows.append({"id": e["id"], "function": e["function"], "missed_function": e.get("missed_function", {}),
                         "tools": tools, "first_messages": first})
        out[cat] = rows
    return out


MULTI_TURN_ENTRIES: dict = {}
MULTI_TURN_TRUTH: dict = {}


def scores(table: dict) -> dict:
    h = eval_runner_helper

    def cat(name):
        got = table.get(name)
        return dict(got, display_accuracy=got["accuracy"]) if got else {"accuracy": 0, "total_count": 0,
                                                                          "display_accuracy": "N/A"}

    simple = h.calculate_unweighted_accuracy([cat(c) for c in ("simple_python", "simple_java", "simple_javascript")])
    non_live = h.calculate_unweighted_accuracy([simple, cat("multiple"), cat("parallel"), cat("parallel_multiple")])
    live = h.calculate_weighted_accuracy([cat(c) for c in ("live_simple", "live_multiple", "live_parallel",
                                                           "live_parallel_multiple")])
    irrelevance = h.calculate_unweighted_accuracy([cat("irrelevance"), cat("live_irrelevance")])
    missing = {"accuracy": 0, "total_count": 0, "display_accuracy": "N/A"}
    overall = h.calculate_percentage_weighted_accuracy([non_live, live, irrelevance, missing, missing],
                                                       [10, 10, 10, 30, 40], display_na_if_category_missing=False)
    return {"non_live_ast": non_live["accuracy"], "live_ast": live["accuracy"],
            "irrelevance_detection": irrelevance["accuracy"], "relevance_detection": cat("live_relevance")["accuracy"],
            "overall": overall["accuracy"]}


def main() -> None:
    """One request, several parts (importing BFCL's evaluation modules takes seconds: once)."""
    req = json.load(sys.stdin)  # every item is its own JSON object: nothing is shared between items
    out = {}
    items = [*req.get("verdicts", []), *req.get("checks", [])]
    for it in items:
        ENTRIES.get(it["category"], it["id"])
    before = ENTRIES.fingerprint()
    if "verdicts" in req:
        out["verdicts"] = [verdict(it) for it in req["verdicts"]]
        if req.get("score_verdicts"):  # BFCL's summaries of these verdicts, per group of items
            tables: dict = {}
            for it, v in zip(req["verdicts"], out["verdicts"]):
                row = tables.setdefault(it.get("group", ""), {}).setdefault(it["category"], {"correct": 0, "total_count": 0})
                row["correct"] += bool(v.get("valid"))
                row["total_count"] += 1
            out["verdict_scores"] = {g: scores({c: dict(r, accuracy=r["correct"] / r["total_count"]) for c, r in t.items()})
                                     for g, t in tables.items()}
    if "checks" in req:
        out["checks"] = [check(it) for it in req["checks"]]
    if items and ENTRIES.fingerprint() != before:
        raise SystemExit("BFCL's evaluation changed its entries or answers: the items would not be independent")
    if "prompts" in req:
        out["prompts"] = prompts(req["prompts"])
    if "scores" in req:
        out["scores"] = scores(req["scores"])
    if "multi_turn" in req:
        out["multi_turn"] = multi_turn(req["multi_turn"])
    if "multi_turn_prompts" in req:
        out["multi_turn_prompts"] = multi_turn_prompts(req["multi_turn_prompts"])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
