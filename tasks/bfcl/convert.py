"""Java and JavaScript argument strings -> Python values, by the parameter's declared type, as BFCL's
checker converts them (our port of eval_checker/ast_eval/type_convertor/*.py).

A Java or JavaScript answer's arguments are strings (``decode_tree``); the checker converts each by
the parameter's type before comparing it with the possible answers. A string that does not look
like its type stays a string (and then fails the comparison); the regular expressions are BFCL's
(Java ``float`` wants an ``f`` suffix and ``long`` an ``L``; ``char`` never converts; an
``ArrayList`` is read from ``new ArrayList<>(Arrays.asList(...))`` or ``{{ add(...); }}``, an
array from ``new T[]{...}``, a ``HashMap`` from ``{{ put("k", v); }}``; JavaScript ``Bigint`` wants
an ``n`` suffix; JavaScript arrays and objects are split on commas with BFCL's patterns, nested
arrays one level deep). ``Set``, ``Hashtable``, ``Queue`` and ``Stack`` raise ``NotImplementedError``
as in BFCL (its evaluation stops there; ours marks the answer as a checker error).
"""
from __future__ import annotations

import re

JAVA_TYPES = {"byte": int, "short": int, "integer": int, "float": float, "double": float, "long": int,
              "boolean": bool, "char": str, "Array": list, "ArrayList": list, "Set": set, "HashMap": dict,
              "Hashtable": dict, "Queue": list, "Stack": list, "String": str, "any": str}
JS_TYPES = {"String": str, "integer": int, "float": float, "Bigint": int, "Boolean": bool, "dict": dict,
            "array": list, "any": str}
#: declared types whose elements are converted by ``items.type``
NESTED = ("Array", "ArrayList", "array")

_JFLOAT = r"^-?\d+(\.\d+)?([eE][+-]?\d+)?[fF]$"


# ---- Java ---------------------------------------------------------------------------------------
def java_value(value: str, kind: str, nested=None):
    if kind not in JAVA_TYPES:
        raise ValueError(f"Unsupported type: {kind}")
    if kind in ("byte", "short", "integer"):
        return int(value) if re.match(r"^-?\d+$", value) else str(value)
    if kind == "float":
        return float(re.sub(r"[fF]$", "", value)) if re.match(_JFLOAT, value) else str(value)
    if kind == "double":
        return float(value) if re.match(r"^-?\d+(\.\d+)?([eE][+-]?\d+)?$", value) else str(value)
    if kind == "long":
        return int(re.sub(r"[lL]$", "", value)) if re.match(r"^-?\d+[lL]$", value) else str(value)
    if kind == "boolean":
        return value == "true" if value in ("true", "false") else str(value)
    if kind == "char":
        return value if re.match(r"^\'.$\'", value) else str(value)  # BFCL's pattern never matches
    if kind == "ArrayList":
        return _java_arraylist(value, nested)
    if kind == "Array":
        return _java_array(value, nested)
    if kind == "HashMap":
        return _java_hashmap(value)
    if kind in ("String", "any"):
        return str(value)
    raise NotImplementedError(f"{kind} conversion is not implemented")


def _java_element(text: str, nested):
    if nested in ("char", "String"):
        return text[1:-1]  # quotes removed
    return java_value(text, nested) if nested else java_literal(text)


def _java_arraylist(text: str, nested):
    m = re.search(r"new\s+ArrayList<\w*>\(Arrays\.asList\((.+?)\)\)", text)
    if m:
        return [_java_element(e.strip(), nested) for e in m.group(1).split(",")]
    m = re.search(r"new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}", text, re.DOTALL)
    if m:
        return [_java_element(e.strip(), nested) for e in re.findall(r"add\((.+?)\)", m.group(1))]
    if re.search(r"new\s+ArrayList<\w*>\(\)", text):
        return []
    return text


def _java_array(text: str, nested):
    m = re.search(r"new\s+\w+\[\]\s*\{(.*?)\}", text)
    if not m:
        return text
    parts = [x.strip() for x in m.group(1).split(",") if x.strip()]
    return [java_value(x, nested) if nested else java_literal(x) for x in parts]


def _java_hashmap(text: str):
    m = re.search(r"new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}", text, re.DOTALL)
    if m:
        puts = m.group(1)
        found = re.findall(r"put\(\"(.*?)\",\s*(.*?)\)", puts) if puts.strip() else []
        return {k: java_literal(v.strip()) for k, v in found}
    return {} if re.search(r"new\s+HashMap<.*?>\s*\(\)", text) else text


def java_literal(text: str):
    """A Java literal without a declared type: boolean, "string", long, float, int, double, text."""
    if text in ("true", "false"):
        return text == "true"
    if text.startswith('"') and text.endswith('"'):
        return text[1:-1]
    if re.match(r"^-?\d+[lL]$", text):
        return int(text[:-1])
    if re.match(_JFLOAT, text):
        return float(re.sub(r"[fF]$", "", text))
    return _number_or_text(text)


def _number_or_text(text: str):
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


# ---- JavaScript ---------------------------------------------------------------------------------
def js_value(value: str, kind: str, nested=None):
    if kind not in JS_TYPES:
        raise ValueError(f"Unsupported type: {kind}")
    if kind == "String":
        quoted = (value.startswith('"') and value.endswith('"')) or (value.startswith("'") and value.endswith("'"))
        return value[1:-1] if quoted else str(value)
    if kind == "integer":
        return int(value) if re.match(r"^-?\d+$", value) else str(value)
    if kind == "float":
        return float(value) if re.match(r"^-?\d+(\.\d+)?$", value) else str(value)
    if kind == "Bigint":
        return int(value[:-1]) if re.match(r"^-?\d+n$", value) else str(value)
    if kind == "Boolean":
        return value == "true" if value in ("true", "false") else str(value)
    if kind == "dict":
        return js_collection(value, "dict", nested)
    if kind == "array":
        return js_collection(value, "array", nested)
    return str(value)  # any


_ARRAY_2D = r"\[\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\]|\bnew\s+Array\(\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\)"
_ARRAY = r"\[(.*?)\]|\bnew\s+Array\((.*?)\)"


def js_collection(code: str, kind: str, nested=None):
    code = code.strip()
    if kind == "array":
        try:
            return _js_array(code, nested)
        except Exception:  # noqa: BLE001 (BFCL returns the text on any failure)
            return code
    if kind != "dict":
        raise ValueError(f"Unsupported type: {kind}")
    if code == "{}":
        return {}
    m = re.match(r"\{(.*?)\}", code)
    if not m:
        return code
    try:
        out = {}
        for key, value in re.findall(r"([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)", m.group(1)):
            key, value = key.strip().strip("'\""), value.strip()
            if value.startswith("[") and value.endswith("]"):
                out[key] = js_collection(value, "array")
            elif value.startswith("{") and value.endswith("}"):
                out[key] = js_collection(value, "dict")
            else:
                out[key] = js_literal(value.strip("'\""))
        return out
    except Exception:  # noqa: BLE001
        return code


def _js_array(code: str, nested):
    m = re.match(_ARRAY_2D, code)
    if m:
        rows = []
        for i, inner in enumerate(re.findall(r"\[(.*?)\]", m.group(0))):
            inner = inner.strip()
            if i == 0 and inner.startswith("["):
                inner = inner[1:]
            rows.append([js_literal(e.strip()) for e in inner.split(",")])
        return rows
    m = re.match(_ARRAY, code)
    if not m:
        return code
    body = m.group(1) if m.group(1) is not None else m.group(2)
    elements = body.strip().split(",") if body is not None and body.strip() else []
    if not nested:
        return [js_literal(e.strip()) for e in elements]
    out = []
    for e in elements:
        e = e.strip()
        out.append(js_value(e, nested, "String") if e.startswith(("'", '"')) else js_value(e, nested))
    return out


def js_literal(text: str):
    """A JavaScript literal without a declared type: boolean, quoted string, int, float, text."""
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    if (text.startswith('"') and text.endswith('"')) or (text.startswith("'") and text.endswith("'")):
        return text[1:-1]
    return _number_or_text(text)
