"""One answer of a BFCL single-turn item -> BFCL's verdict, and the figures evalkit reports beside it.

The steps are BFCL's evaluation of one entry (eval_checker/eval_runner.py,
``_evaluate_single_ast_entry`` and ``_evaluate_single_relevance_entry``) for a prompt-based model:

* AST categories: decode in the category's language (a failure: ``ast_decoder:decoder_failed``);
  the result must be a list of ``{name: {param: value}}`` (else
  ``ast_decoder:decoder_wrong_output_format``); then the checker against the possible answers.
* irrelevance / live_irrelevance: right when the answer holds no call: it does not decode as
  Python calls, or decodes to nothing (``[]``). live_relevance: right when it holds at least one
  call (its arguments are not checked). Both decode as Python, whatever the question.

Figures beside accuracy, for AST categories (0/1 per answer, lower is better):
``invalid_format`` (the answer is not a list of calls), ``unknown_function`` (a call names a
function that is not among the item's functions) and ``wrong_arg_type`` (the checker rejects an
argument's type: ``type_error:*``, for parallel answers in any failed match).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

from .checker import check, expected_name
from .data import kind_of, language_of
from .decode import DecodeError, decode_python


@dataclass
class Verdict:
    valid: bool
    error_type: str = ""
    message: str = ""
    calls: Any = None                      # the decoded answer (None when it did not decode)
    metrics: dict = field(default_factory=dict)


def decoder(language: str):
    if language == "python":
        return decode_python
    from . import decode_tree
    return decode_tree.decode_java if language == "java" else decode_tree.decode_javascript


def is_call_list(calls) -> bool:
    """BFCL's ``is_function_calling_format_output``: a list of one-key dicts with dict values."""
    return type(calls) == list and all(type(c) == dict and len(c) == 1 and type(next(iter(c.values()))) == dict
                                       for c in calls)


def judge(category: str, functions: list, ground_truth: Optional[list], text: str,
          underscore_to_dot: bool = False) -> Verdict:
    """BFCL's verdict on ``text`` (the model's answer) for an item of ``category``."""
    language = language_of(category) if kind_of(category) == "ast" else "python"
    try:
        calls, problem = decoder(language)(text), None
    except DecodeError as e:
        calls, problem = None, str(e)[:300]
    return judge_calls(category, functions, ground_truth, calls, problem, underscore_to_dot)


def judge_calls(category: str, functions: list, ground_truth: Optional[list], calls, decode_problem: Optional[str],
                underscore_to_dot: bool = False) -> Verdict:
    """BFCL's verdict on an answer already decoded (``calls``), or on one that did not decode
    (``decode_problem``): the prompt-based text decoded, or a function-calling model's tool calls."""
    kind = kind_of(category)
    if kind != "ast":
        has_call = (decode_problem is None and is_call_list(calls) and len(calls) > 0
                    and not (len(calls) == 1 and len(calls[0]) == 0))
        valid = has_call if kind == "relevance" else not has_call
        error = "" if valid else ("relevance_error:decoder_failed" if kind == "relevance"
                                  else "irrelevance_error:decoder_success")
        return Verdict(valid, error, "", calls, {"accuracy": float(valid)})
    figures = {"accuracy": 0.0, "invalid_format": 1.0, "unknown_function": 0.0, "wrong_arg_type": 0.0}
    if decode_problem is not None:
        return Verdict(False, "ast_decoder:decoder_failed", decode_problem, None, figures)
    if not is_call_list(calls):
        return Verdict(False, "ast_decoder:decoder_wrong_output_format", "", calls, figures)
    result = check(category, functions, calls, ground_truth, language_of(category), underscore_to_dot)
    known = {expected_name(f["name"], underscore_to_dot) for f in functions}
    types = (result.error_type, *result.sub_error_types)
    figures.update(accuracy=float(result.valid), invalid_format=0.0,
                   unknown_function=float(any(name not in known for c in calls for name in c)),
                   wrong_arg_type=float(any(t.startswith("type_error") for t in types)))
    return Verdict(result.valid, result.error_type, result.message, calls, figures)


def json_safe(x):
    """A decoded answer as JSON can hold it (tuples as lists, other keys and values as text)."""
    if isinstance(x, dict):
        return {k if isinstance(k, str) else repr(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return repr(x)
    if x is None or isinstance(x, (str, int, float, bool)):
        return x
    return repr(x)
