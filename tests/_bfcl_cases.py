"""Answers for the BFCL parity tests, made from BFCL's possible answers (tests/tasks/test_bfcl_checker.py).

An item's possible answer becomes a call: each parameter takes its first accepted value, optional
parameters (``""`` among the accepted values, and not required by the function doc) are left out, a dict parameter takes the first value
of each key, a list of dicts each dict so. A call is a list of ``(param, value, declared type, item
type)``; it is written two ways:

* decoded (what BFCL's checker takes): Python values as they are; Java and JavaScript values as
  the strings their decoders give (``"5L"``, ``"new ArrayList<>(Arrays.asList(1, 2))"``,
  ``"[\\"a\\", \\"b\\"]"``);
* as a model would write it (what BFCL's decoder takes): ``[f(a=1, b="x")]`` in the item's language.

``variants`` gives the answer and its systematic mutations: another function's name (or a made-up
one), a required argument dropped, an argument of the wrong type, an extra call, the calls in
reverse order, an extra unknown argument, the optional arguments given, a second accepted value,
a float given as an int, a string restyled (upper case, ``_`` for spaces), dotted names written
with underscores (checked with and without BFCL's ``underscore_to_dot``). Irrelevance and
relevance items get fixed texts: nothing, ``[]``, prose, a call to one of their functions,
a broken call.
"""
from __future__ import annotations

import json
import re

WRONG = object()  # a value of another type than the parameter's
#: a text value written as code rather than a string literal: a name, a call, a ``new``
JAVA_EXPRESSION = re.compile(r"(new\s+)?[A-Za-z_$][\w$.]*(<[^>]*>)?(\(.*\))?", re.S)
JAVA_ARRAY_TYPE = {"integer": "int", "long": "long", "String": "String", "char": "char", "any": "Object",
                   "double": "double", "float": "float", "boolean": "boolean"}


def _first(options):
    return next((o for o in options if o != ""), "")


def _materialize(value, declared: str, items):
    if declared == "dict" and isinstance(value, dict):
        return {k: _first(v) for k, v in value.items() if _first(v) != ""}
    if declared == "HashMap" and isinstance(value, dict):
        return {k: _first(v) for k, v in value.items() if _first(v) != ""}
    if items == "dict" and isinstance(value, list):
        return [_materialize(d, "dict", None) for d in value]
    return value


def _doc(functions, name):
    return next((f for f in functions if f["name"] == name), None)


def abstract_calls(item: dict, choose=_first, optional: bool = False) -> list:
    """[(name, [(param, value, declared, items), ...]), ...] of the item's possible answer (with
    ``optional``: the optional parameters too, with their first value)."""
    out = []
    for call in item["ground_truth"]:
        (name, params), = call.items()
        doc = _doc(item["functions"], name) or {"parameters": {"properties": {}}}
        props, required = doc["parameters"]["properties"], doc["parameters"].get("required", [])
        args = []
        for p, options in params.items():
            v = choose(options)
            if v == "" or ("" in options and p not in required and not optional):
                continue
            d = props.get(p, {"type": "string"})
            args.append((p, _materialize(v, d["type"], d.get("items", {}).get("type")), d["type"],
                         d.get("items", {}).get("type")))
        out.append((name, args))
    return out


# ---- decoded form -------------------------------------------------------------------------------
def decoded(calls, language: str) -> list:
    return [{name: {p: _decoded_value(v, t, it, language) for p, v, t, it in args}} for name, args in calls]


def _decoded_value(v, t, items, language):
    if v is WRONG:
        return 12345 if language != "python" or t in ("string", "any") else "wrong type"
    if language == "python":
        return v
    if isinstance(v, str) and t not in ("String", "any", "char"):
        return v  # a variable name, as the data has them
    return (_java_decoded if language == "java" else _js_decoded)(v, t, items)


def _java_literal(v, elem=None):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v) if elem in (None, "String", "char", "any") else v
    if elem == "long":
        return f"{v}L"
    if elem == "float":
        return f"{v}f"
    return repr(v) if isinstance(v, float) else str(v)


def _java_decoded(v, t, items):
    if t == "boolean":
        return "true" if v else "false"
    if t == "long":
        return f"{v}L"
    if t == "float":
        return f"{v}f"
    if t in ("integer", "byte", "short", "double"):
        return repr(v) if isinstance(v, float) else str(v)
    if t == "ArrayList" and isinstance(v, list):
        return f"new ArrayList<>(Arrays.asList({', '.join(_java_literal(x, items) for x in v)}))"
    if t == "Array" and isinstance(v, list):
        elems = ", ".join(str(x) if isinstance(x, str) else _java_literal(x, items) for x in v)
        return f"new {JAVA_ARRAY_TYPE.get(items, 'Object')}[]{{{elems}}}"
    if t == "HashMap" and isinstance(v, dict):
        puts = " ".join(f'put("{k}", {_java_literal(x)});' for k, x in v.items())
        return f"new HashMap<String, Object>() {{{{ {puts} }}}}"
    return v if isinstance(v, str) else json.dumps(v)


def _js_literal(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_js_literal(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_js_literal(x)}" for k, x in v.items()) + "}"
    return repr(v) if isinstance(v, float) else str(v)


def _js_decoded(v, t, items):
    if t == "Bigint":
        return f"{v}n"
    if t in ("String", "any") and isinstance(v, str):
        return v
    return _js_literal(v)


# ---- as a model writes it -----------------------------------------------------------------------
def text(calls, language: str) -> str:
    parts = []
    for name, args in calls:
        rendered = ", ".join(f"{p}={_source(v, t, it, language)}" for p, v, t, it in args)
        parts.append(f"{name}({rendered})")
    return "[" + ", ".join(parts) + "]"


def _source(v, t, items, language):
    if language == "python":
        return repr("wrong type" if t not in ("string", "any") else 12345) if v is WRONG else repr(v)
    if v is WRONG:
        return '"wrong type"' if t not in ("String", "any", "char") else "12345"
    if isinstance(v, str) and t not in ("String", "char"):  # a variable name, or code given as text
        return v if JAVA_EXPRESSION.fullmatch(v) else json.dumps(v)
    if language == "javascript":
        return _js_decoded(v, t, items) if t == "Bigint" else _js_literal(v)
    if t == "Array" and isinstance(v, list):
        return f"new {JAVA_ARRAY_TYPE.get(items, 'Object')}[]{{{', '.join(_java_literal(x, items) for x in v)}}}"
    return json.dumps(v) if isinstance(v, str) else _java_decoded(v, t, items)


# ---- mutations ----------------------------------------------------------------------------------
def _other_name(item, name):
    others = [f["name"] for f in item["functions"] if f["name"] != name]
    return others[0] if others else name + "_v2"


def _with_args(calls, i, args):
    return [(n, args if j == i else a) for j, (n, a) in enumerate(calls)]


def _second(options):
    rest = [o for o in options if o != ""]
    return rest[1] if len(rest) > 1 else _first(options)


def variants(item: dict) -> list:
    """[(label, calls, underscore_to_dot)] for an AST item: its answer and the mutations."""
    calls = abstract_calls(item)
    out = [("answer", calls, False)]
    name, args = calls[0]
    out.append(("wrong_function", [(_other_name(item, name), args)] + calls[1:], False))
    doc = _doc(item["functions"], name)
    required = doc["parameters"].get("required", []) if doc else []
    drop = next((a for a in args if a[0] in required), None)
    if drop:
        out.append(("missing_required", _with_args(calls, 0, [a for a in args if a is not drop]), False))
    if args:
        p, v, t, it = args[0]
        out.append(("wrong_type", _with_args(calls, 0, [(p, WRONG, t, it)] + args[1:]), False))
        out.append(("unknown_argument", _with_args(calls, 0, args + [("unknown_arg_xyz", 1, "integer", None)]), False))
    out.append(("extra_call", calls + [calls[0]], False))
    if len(calls) > 1:
        out.append(("reversed", calls[::-1], False))
    with_optional = abstract_calls(item, optional=True)
    if with_optional != calls:
        out.append(("optional_given", with_optional, False))
    second = abstract_calls(item, _second)
    if second != calls:
        out.append(("second_option", second, False))
    floats = [a for a in args if a[2] == "float" and isinstance(a[1], float) and a[1].is_integer()]
    if floats:
        f = floats[0]
        out.append(("int_for_float", _with_args(calls, 0, [(a[0], int(a[1]), a[2], a[3]) if a is f else a
                                                           for a in args]), False))
    strings = [a for a in args if a[2] in ("string", "String") and isinstance(a[1], str) and a[1]]
    if strings:
        s = strings[0]
        out.append(("restyled_string", _with_args(calls, 0, [(a[0], a[1].upper().replace(" ", "_"), a[2], a[3])
                                                             if a is s else a for a in args]), False))
    if any("." in n for n, _ in calls):
        underscored = [(n.replace(".", "_"), a) for n, a in calls]
        out += [("underscored_names", underscored, True), ("underscored_names", underscored, False),
                ("dotted_names_fc", calls, True)]
    return out


def relevance_texts(item: dict) -> list:
    """[(label, text)] for an irrelevance or relevance item."""
    f = item["functions"][0] if item["functions"] else {"name": "get_weather", "parameters": {"properties": {}}}
    placeholder = {"string": '"x"', "integer": "1", "float": "1.5", "boolean": "True", "array": "[]", "dict": "{}"}
    args = ", ".join(f"{p}={placeholder.get(d.get('type'), '1')}" for p, d in f["parameters"]["properties"].items()
                     if p in f["parameters"].get("required", []))
    return [("empty", ""), ("empty_list", "[]"), ("prose", "I cannot answer this with the given functions."),
            ("call", f"[{f['name']}({args})]"), ("bare_call", f"{f['name']}({args})"),
            ("broken_call", f"[{f['name']}({args}"), ("fenced", f"```python\n[{f['name']}({args})]\n```"),
            ("positional", f"[{f['name']}(1, 2)]"), ("attribute_value", f"[{f['name']}(x=math.pi)]")]


def unpassable(item: dict, language: str, written: bool) -> str:
    """Why BFCL itself cannot accept this item's possible answer ("" when it can): the answer
    contradicts the function doc, or (Java) BFCL's conversion or, for ``written`` answers, BFCL's
    Java decoder cannot give the value."""
    for call in item["ground_truth"]:
        (name, params), = call.items()
        doc = _doc(item["functions"], name)
        props, required = doc["parameters"]["properties"], doc["parameters"].get("required", [])
        if any(p not in params or all(o == "" for o in params[p]) for p in required):
            return "the possible answer lacks a parameter the function requires"
        if any(p not in props and "" not in opts for p, opts in params.items()):
            return "the possible answer has a parameter the function does not declare"
    if language != "java":
        return ""
    for name, args in abstract_calls(item):
        for p, v, t, items in args:
            if t in ("Array", "ArrayList") and items == "any" and isinstance(v, list) \
                    and not all(isinstance(x, str) for x in v):
                return "Java 'any' elements stay strings in BFCL's conversion"
            if written and t == "HashMap" and isinstance(v, dict) and v:
                return "BFCL's Java decoder drops the body of new HashMap<>() {{ put(...); }}"
            if written and t == "Array" and items in ("String", "char") and isinstance(v, list):
                return "BFCL's Java array conversion keeps the quotes of string elements"
    return ""
