"""Tool-call parsers: a model's text -> ``ParsedCalls`` (the text that is not a call, the calls, and
why the text was not taken as calls when it looked like them).

Named as vLLM names its parsers, and parsing as they do (``tests/agents/test_tool_parsers.py``
checks each against vLLM's own on the same texts): ``hermes`` (``<tool_call>{json}</tool_call>``,
Qwen 2.5/3, Hermes, and evalkit's fallback chat template for models whose template ignores tools)
and ``pythonic`` (``[get_weather(city="Paris"), ...]``, Llama 3.2/4, ToolACE, BFCL's prompt format).
Tasks register their own formats with ``@register_parser("name")`` (e.g. BFCL's prompt-based one).
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Callable, Optional


@dataclass
class ParsedCalls:
    content: str
    #: ``{"name": str, "arguments": dict}`` each (arguments not a dict: kept raw under ``raw_arguments``)
    calls: list = field(default_factory=list)
    #: the text tried to call a tool but could not be read (invalid JSON, not literals, ...)
    error: Optional[str] = None


_PARSERS: dict[str, Callable[[str, list], ParsedCalls]] = {}


def register_parser(name: str):
    def deco(fn):
        _PARSERS[name] = fn
        return fn
    return deco


def names() -> list[str]:
    return sorted(_PARSERS)


def get(name: str) -> Callable[[str, list], ParsedCalls]:
    if name not in _PARSERS:
        raise KeyError(f"unknown tool-call parser {name!r}; known: {', '.join(names())}")
    return _PARSERS[name]


def parse(name: str, text: str, tools: Optional[list] = None) -> ParsedCalls:
    return get(name)(text, tools or [])


def call_dict(name, arguments) -> dict:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return {"name": name, "arguments": {}, "raw_arguments": arguments}
    if not isinstance(arguments, dict):
        return {"name": name, "arguments": {}, "raw_arguments": arguments}
    return {"name": name, "arguments": arguments}


# ---- hermes ------------------------------------------------------------------------------------
_HERMES = re.compile(r"<tool_call>(.*?)</tool_call>|<tool_call>(.*)", re.DOTALL)


@register_parser("hermes")
def hermes(text: str, tools: list) -> ParsedCalls:
    if "<tool_call>" not in text:
        return ParsedCalls(text)
    try:
        raw = [json.loads(a if a else b) for a, b in _HERMES.findall(text)]
        calls = [call_dict(c["name"], json.dumps(c["arguments"], ensure_ascii=False)) for c in raw]
    except Exception as exc:  # as vLLM: the whole text is content
        return ParsedCalls(text, error=f"hermes: {type(exc).__name__}: {exc}"[:300])
    return ParsedCalls(text[:text.find("<tool_call>")], calls)


# ---- pythonic ----------------------------------------------------------------------------------
_PYTHONIC = re.compile(
    r"\[([a-zA-Z]+\w*\(([a-zA-Z]+\w*=.*,\s*)*([a-zA-Z]+\w*=.*\s)?\),\s*)*([a-zA-Z]+\w*\(([a-zA-Z]+\w*=.*,\s*)*"
    r"([a-zA-Z]+\w*=.*\s*)?\)\s*)+\]", re.DOTALL)
_JSON_NAMES = {"null": None, "true": True, "false": False}


def _literal(node):
    if isinstance(node, ast.Constant):
        if node.value is None or isinstance(node.value, (str, int, float)):
            return node.value
        raise ValueError("tool call arguments must be JSON values")
    if isinstance(node, ast.Dict):
        if not all(isinstance(k, ast.Constant) for k in node.keys):
            raise ValueError("dict tool call arguments must have literal keys")
        return {k.value: _literal(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [_literal(v) for v in node.elts]
    if isinstance(node, ast.JoinedStr) and all(isinstance(p, ast.Constant) for p in node.values):
        return "".join(str(p.value) for p in node.values)
    if isinstance(node, ast.Name) and node.id in _JSON_NAMES:
        return _JSON_NAMES[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _literal(node.operand)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v if isinstance(node.op, ast.USub) else v
    raise ValueError("tool call arguments must be literals")


def _dotted(node) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        raise ValueError("invalid tool call name")
    return ".".join([node.id] + parts[::-1])


@register_parser("pythonic")
def pythonic(text: str, tools: list) -> ParsedCalls:
    if not _PYTHONIC.match(text):
        return ParsedCalls(text)
    try:
        body = ast.parse(text).body
        value = getattr(body[0], "value", None)
        if not (isinstance(value, ast.List) and all(isinstance(e, ast.Call) for e in value.elts)):
            raise ValueError("tool output must be a list of function calls")
        calls = []
        for e in value.elts:
            if not isinstance(e.func, (ast.Name, ast.Attribute)):
                raise ValueError("invalid tool call name")
            args = {k.arg: _literal(k.value) for k in e.keywords}
            calls.append(call_dict(_dotted(e.func), json.dumps(args, ensure_ascii=False)))
    except Exception as exc:  # vLLM: treated as regular text
        return ParsedCalls(text, error=f"pythonic: {type(exc).__name__}: {exc}"[:300])
    return ParsedCalls("", calls)
