"""BFCL's AST checker, our port: are a model's decoded calls one of the possible answers?

The semantics are BFCL v4's (eval_checker/ast_eval/ast_checker.py), rule for rule, because the
verdicts must be the same (tests/tasks/test_bfcl_checker.py runs BFCL's own checker beside this one):

* Which check: a category with "parallel" in its name matches calls to answers in any order (each
  expected call, in order, takes the first unmatched output call that passes); one with "multiple"
  wants exactly one call, checked against the first answer's function; others exactly one call,
  checked against the first function doc.
* One call: the expected function's name must be a key of the call (with ``underscore_to_dot``,
  for models whose API forbids dots, ``a.b`` is expected as ``a_b``); every ``required`` parameter
  present; every given parameter declared and in the possible answer; each value type-checked and
  compared; a possible-answer parameter not given must list ``""`` (optional).
* Types: Python types by name (``integer`` is ``int`` exactly, so ``True`` is no integer; an
  ``int`` is accepted for ``float``; a ``tuple`` value counts as a list); arrays and tuples have
  their elements checked one level deep against the answer's element types (no int-for-float
  there). A value of the possible answers' type where the declared type differs counts as a
  "variable" and is compared as is. Java and JavaScript values must be strings and are converted
  by the declared type first (``convert``).
* Values: strings compare after ``standardize`` (spaces and ``,./-_*^`` removed, lower case, ``'``
  as ``"``), lists element-wise after standardizing their strings, dicts key by key against any of
  the answer's dicts, lists of dicts position by position; other values by equality (so ``1 ==
  1.0 == True``).

A result is ``Check(valid, error_type, message)``; ``error_type`` is BFCL's (``type_error:simple``,
``value_error:string``, ``simple_function_checker:missing_required``...). Where BFCL's checker
raises (a doc without ``required``, an array without ``items``, a ``Set`` parameter), the answer
is invalid with ``checker_error:<exception>``: BFCL's own run would stop there.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .convert import JAVA_TYPES, JS_TYPES, NESTED, java_value, js_value

PY_TYPES = {"string": str, "integer": int, "float": float, "boolean": bool, "array": list, "tuple": list,
            "dict": dict, "any": str}
PY_NESTED = ("array", "tuple")


@dataclass(frozen=True)
class Check:
    valid: bool
    error_type: str = ""
    message: str = ""
    #: the error types of the failed matches of a parallel answer
    sub_error_types: tuple = ()
    is_variable: bool = False


OK = Check(True)


def standardize(s: str) -> str:
    """BFCL's string normalisation: drop spaces and ``,./-_*^``, lower case, ``'`` -> ``"``."""
    return re.sub(r"[ \,\.\/\-\_\*\^]", "", s).lower().replace("'", '"')


def expected_name(name: str, underscore_to_dot: bool) -> str:
    return re.sub(r"\.", "_", name) if underscore_to_dot and "." in name else name


def check(category: str, functions: list, calls: list, answers: list, language: str = "python",
          underscore_to_dot: bool = False) -> Check:
    """BFCL's ``ast_checker`` on decoded calls (a list of ``{name: {param: value}}``)."""
    try:
        if "parallel" in category:
            return _parallel(functions, calls, answers, language, underscore_to_dot)
        if "multiple" in category:
            if len(calls) != len(answers):
                return Check(False, "multiple_function_checker:wrong_count", "Wrong number of functions.")
            doc = _find(functions, next(iter(answers[0])))
            return check_call(doc, calls[0], answers[0], language, underscore_to_dot)
        if len(calls) != 1:
            return Check(False, "simple_function_checker:wrong_count", "Wrong number of functions.")
        return check_call(functions[0], calls[0], answers[0], language, underscore_to_dot)
    except Exception as e:  # noqa: BLE001 (where BFCL's checker itself raises)
        return Check(False, f"checker_error:{type(e).__name__}", str(e)[:300])


def _find(functions, name: str):
    if isinstance(functions, list):
        return next((f for f in functions if f["name"] == name), None)
    return functions


def _parallel(functions, calls, answers, language, u2d) -> Check:
    if len(calls) != len(answers):
        return Check(False, "parallel_function_checker_no_order:wrong_count", "Wrong number of functions.")
    matched: list[int] = []
    for i, answer in enumerate(answers):
        doc = _find(functions, next(iter(answer)))
        result, subs = OK, []
        for j, call in enumerate(calls):
            if j in matched:
                continue
            result = check_call(doc, call, answer, language, u2d)
            if result.valid:
                matched.append(j)
                break
            subs.append(result.error_type)
        if not result.valid:
            return Check(False, "parallel_function_checker_no_order:cannot_find_match",
                         f"Could not find a matching function for index {i} of possible answers.", tuple(subs))
    return OK


def check_call(doc: dict, call: dict, answer: dict, language: str, u2d: bool) -> Check:
    """BFCL's ``simple_function_checker``: one decoded call against one expected call."""
    expected = next(iter(answer.values()))
    details, required = doc["parameters"]["properties"], doc["parameters"]["required"]
    name = expected_name(doc["name"], u2d)
    if name not in call:
        return Check(False, "simple_function_checker:wrong_func_name", f"Function name {name!r} not found.")
    given = call[name]
    for p in required:
        if p not in given:
            return Check(False, "simple_function_checker:missing_required", f"Missing required parameter: {p!r}.")
    for p, value in given.items():
        if p not in details or p not in expected:
            return Check(False, "simple_function_checker:unexpected_param", f"Unexpected parameter: {p!r}.")
        declared, nested = details[p]["type"], None
        if language in ("java", "javascript"):
            table, convert = (JAVA_TYPES, java_value) if language == "java" else (JS_TYPES, js_value)
            kind = table[declared]
            if type(value) != str:
                return Check(False, f"type_error:{'java' if language == 'java' else 'js'}",
                             f"Incorrect type for parameter {p!r}. Expected type String, got {type(value).__name__}.")
            if declared in NESTED:
                item = details[p]["items"]["type"]
                nested, value = table[item], convert(value, declared, item)
            else:
                value = convert(value, declared)
        else:
            kind = PY_TYPES[declared]
            if declared in PY_NESTED:
                nested = PY_TYPES[details[p]["items"]["type"]]
        if declared == "tuple" and type(value) == tuple:
            value = list(value)
        if language == "python" and declared == "float" and type(value) == int:
            value = float(value)
        typed = type_check(p, value, expected[p], kind, nested)
        if not typed.valid:
            return typed
        if not typed.is_variable:
            special = _special_check(p, value, expected[p], kind, nested)
            if special is not None:
                if not special.valid:
                    return special
                continue
        if value not in expected[p]:
            return Check(False, "value_error:others", f"Invalid value for parameter {p!r}: {value!r}.")
    for p in expected:
        if p not in given and "" not in expected[p]:
            return Check(False, "simple_function_checker:missing_optional",
                         f"Optional parameter {p!r} not provided and not marked as optional.")
    return OK


def _special_check(p, value, accepted, kind, nested):
    if kind == dict:
        return dict_check(p, value, accepted)
    if kind == list and nested == dict:
        return list_dict_check(p, value, accepted)
    if kind == str:
        return string_check(p, value, accepted)
    if kind == list:
        return list_check(p, value, accepted)
    return None


def _answer_type(accepted):
    """The type of the first possible answer that is not ``""`` (optional)."""
    return next((type(a) for a in accepted if a != ""), None)


def type_check(p, value, accepted, kind, nested) -> Check:
    """BFCL's ``type_checker``: the value's type, one level of elements for arrays, "variables"."""
    answer_type = _answer_type(accepted)
    is_variable = answer_type is not None and answer_type != kind
    failed = None
    if type(value) == kind:
        if nested is None:
            return Check(True, is_variable=is_variable)
        for item in accepted:
            if type(item) == list and not all(type_check(p, v, item, nested, None).valid for v in value):
                continue
            return Check(True, is_variable=is_variable)
        failed = Check(False, "type_error:nested", f"Nested type checking failed for parameter {p!r}.")
    if answer_type is not None and type(value) == answer_type:
        return failed if failed is not None else Check(True, is_variable=True)
    return Check(False, "type_error:simple", f"Incorrect type for parameter {p!r}: got {type(value).__name__}.")


def string_check(p, value: str, accepted) -> Check:
    if standardize(value) not in [standardize(a) for a in accepted if type(a) == str]:
        return Check(False, "value_error:string", f"Invalid value for parameter {p!r}: {value!r}.")
    return OK


def _std_items(a) -> list:
    return [standardize(a[j]) if type(a[j]) == str else a[j] for j in range(len(a))]


def list_check(p, value, accepted) -> Check:
    given = [standardize(v) if type(v) == str else v for v in value]
    if given not in [_std_items(a) for a in accepted]:
        return Check(False, "value_error:list/tuple", f"Invalid value for parameter {p!r}: {value!r}.")
    return OK


def dict_check(p, value: dict, accepted) -> Check:
    """``value`` against each possible dict (``""`` skipped): every key known and accepted, every
    key the answer needs (no ``""`` among its values) present."""
    result = Check(False, "dict_checker:unclear")
    for answer in accepted:
        if answer == "":
            continue
        result = None
        for key, v in value.items():
            if key not in answer:
                result = Check(False, "value_error:dict_key", f"Unexpected dict key parameter: {key!r}.")
                break
            if (standardize(v) if type(v) == str else v) not in _std_items(answer[key]):
                result = Check(False, "value_error:dict_value", f"Invalid value for parameter {key!r}: {v!r}.")
                break
        for key, values in answer.items():
            if key not in value and "" not in values:
                result = Check(False, "value_error:dict_key", f"Missing dict key parameter: {key!r}.")
                break
        if result is None:
            return OK
    return result


def list_dict_check(p, value: list, accepted) -> Check:
    """A list of dicts against each possible list, position by position."""
    result = Check(False, "list_dict_checker:unclear")
    for answer in accepted:
        if len(value) != len(answer):
            result = Check(False, "value_error:list_dict_count", "Wrong number of dictionaries in the list.")
            continue
        for j in range(len(value)):
            result = dict_check(p, value[j], [answer[j]])
            if not result.valid:
                break
        else:
            return OK
    return result
