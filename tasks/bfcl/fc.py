"""BFCL for function-calling models (``tool_mode=native``): the question's messages with the
function docs as native tools, the reply's ``tool_calls`` as the answer, as BFCL's FC handlers do it.

Tools are BFCL's ``convert_to_tool`` for OpenAI-compatible APIs (model_handler/utils.py, ``OPENAI_COMPLETIONS``):
the docs with BFCL's language hints, dots in names replaced by underscores (tool names allow no dots;
the checker then expects the underscore form: ``underscore_to_dot``), ``parameters.type`` set to
``object`` and every property's type mapped by ``GORILLA_TO_OPENAPI`` (``float`` gets ``format: float``
and " This is a float type value." in its description; unknown types become ``string``; array items
and nested properties mapped too). The answer is ``[{name: arguments}]``, one per call; a call whose
arguments are not a JSON object does not decode (BFCL's ``json.loads`` fails), nor does a reply
without calls (irrelevance: right; AST categories: a decoder failure).
"""
from __future__ import annotations

import copy
import re

from .prompt import hinted_functions

GORILLA_TO_OPENAPI = {"integer": "integer", "number": "number", "float": "number", "string": "string",
                      "boolean": "boolean", "bool": "boolean", "array": "array", "list": "array", "dict": "object",
                      "object": "object", "tuple": "array", "any": "string", "byte": "integer", "short": "integer",
                      "long": "integer", "double": "number", "char": "string", "ArrayList": "array",
                      "Array": "array", "HashMap": "object", "Hashtable": "object", "Queue": "array",
                      "Stack": "array", "Any": "string", "String": "string", "Bigint": "integer"}


def _cast(properties: dict) -> dict:
    for key, value in properties.items():
        kind = value.get("type")
        if kind is None:
            value["type"] = "string"
        else:
            if kind == "float":
                value["format"] = "float"
                value["description"] = value.get("description", "") + " This is a float type value."
            value["type"] = GORILLA_TO_OPENAPI.get(kind, "string")
        if value["type"] in ("array", "object"):
            if "properties" in value:
                value["properties"] = _cast(value["properties"])
            elif "items" in value:
                items = value["items"]
                items["type"] = GORILLA_TO_OPENAPI[items["type"]]
                if items["type"] == "array" and "items" in items:
                    items["items"]["type"] = GORILLA_TO_OPENAPI[items["items"]["type"]]
                elif items["type"] == "object" and "properties" in items:
                    items["properties"] = _cast(items["properties"])
    return properties


def openai_tools(functions: list, category: str, hint: bool = True) -> list[dict]:
    """The docs as OpenAI tools; ``hint=False`` for docs that already have (or, as BFCL's held-out
    multi-turn functions, never get) the language hint."""
    out = []
    for f in copy.deepcopy(hinted_functions(functions, category) if hint else functions):
        f["name"] = re.sub(r"\.", "_", f["name"])
        f["parameters"]["type"] = "object"
        f["parameters"]["properties"] = _cast(f["parameters"]["properties"])
        out.append({"type": "function", "function": f})
    return out


def answer_of(tool_calls) -> tuple:
    """(BFCL's decoded answer, why it does not decode or None) from a reply's tool calls. A reply
    without calls does not decode (BFCL decodes its text content as calls and fails)."""
    if not tool_calls:
        return None, "the reply has no tool calls"
    calls = []
    for c in tool_calls or []:
        if "raw_arguments" in c:
            return None, f"the arguments of {c['name']!r} are not a JSON object"
        calls.append({c["name"]: c["arguments"]})
    return calls, None
