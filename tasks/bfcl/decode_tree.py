"""Java and JavaScript answers -> function calls, as BFCL decodes them (our port of its traversal).

BFCL parses these answers with tree-sitter (model_handler/parser/java_parser.py, js_parser.py), so
the grammar decides what parses: a tree whose S-expression names an ``ERROR`` node fails the decode
(tree-sitter's error recovery is the grammar's: in Java ``A.b(x=1)`` is an error but ``A.b(x=1);``,
``A.b(x=1, y=2)`` and ``A.b(x=true)`` are not), and so does a parameter named twice. We use the same parser library and
grammars (the ``bfcl`` extra pins BFCL's versions: tree-sitter 0.21.3, tree-sitter-java 0.21.0,
tree-sitter-javascript 0.21.4) and walk the tree ourselves as BFCL does:

* Java: the text inside the added brackets is parsed; the first method invocation (depth first)
  is the one call, named ``object.name``; ``name=value`` arguments keep the value's text (string
  and char literals without their quotes; arrays as ``new T[]{...}``, object creations as
  ``new T(args)`` without any class body, other nodes as their children's text joined without
  spaces), a bare identifier argument goes under the key ``None``, other positional arguments are
  dropped. No call: ``{}`` (then not a list of calls). Texts are cut at byte offsets from the
  decoded text, as BFCL cuts them (this shifts after non-ASCII characters; kept for equal verdicts).
* JavaScript: the first call expression directly in a top-level expression statement; argument
  values as their source text, one pair of matching quotes removed; ``identifier`` and ``true``
  arguments under ``None``. No call: ``None``.

Values stay strings here; the checker converts them by the parameter's declared type.
"""
from __future__ import annotations

import functools
import importlib

from evalkit.util.extras import MissingExtra, install_hint

from .decode import DecodeError, bracketed

GRAMMARS = {"java": "tree_sitter_java", "javascript": "tree_sitter_javascript"}


@functools.lru_cache(maxsize=None)
def parser(language: str):
    """A tree-sitter parser for ``language`` (either API: 0.21's ``set_language`` or 0.22+)."""
    try:
        ts = importlib.import_module("tree_sitter")
        grammar = importlib.import_module(GRAMMARS[language])
    except ModuleNotFoundError as e:
        raise MissingExtra(f"BFCL's {language} answers are parsed with tree-sitter; the Python package "
                           f"{e.name!r} is missing: {install_hint('bfcl')}") from None
    try:
        lang = ts.Language(grammar.language())
    except TypeError:  # tree-sitter 0.21 wants the name too
        lang = ts.Language(grammar.language(), language)
    p = ts.Parser()
    if hasattr(p, "set_language"):
        p.set_language(lang)
    else:
        p.language = lang
    return p


def has_error(root) -> bool:
    """BFCL's test, ``"ERROR" in root.sexp()`` (the S-expression is ``str(root)`` after tree-sitter
    0.22); an error leaf prints as ``UNEXPECTED`` there, so it does not count."""
    return "ERROR" in (root.sexp() if hasattr(root, "sexp") else str(root))


def _parse(p, language: str, source: str):
    tree = p.parse(source.encode("utf-8"))
    if has_error(tree.root_node):
        raise DecodeError(f"the {language} parser found an error in the answer")
    return tree.root_node


def decode_java(text: str):
    """BFCL's ``ast_parse(..., JAVA)`` on a prompt-based answer: a one-call list, or ``{}``."""
    source, p = bracketed(text)[1:-1], parser("java")
    try:
        root = _parse(p, "java", source)
        return _JavaWalk(source).first_call(root) or {}
    except DecodeError:
        raise
    except Exception as e:  # noqa: BLE001 (a malformed tree, RecursionError: a failed decode)
        raise DecodeError(f"{type(e).__name__}: {e}") from None


class _JavaWalk:
    def __init__(self, source: str):
        self.source = source

    def text(self, node) -> str:
        return self.source[node.start_byte:node.end_byte]  # byte offsets on the str, as BFCL slices

    def value(self, node, nested: bool = False) -> str:
        if node is None:
            raise DecodeError("incomplete Java expression")
        t = node.type
        if t in ("string_literal", "character_literal"):
            return self.text(node) if nested else self.text(node)[1:-1]
        if t in ("identifier", "class_literal", "type_identifier", "method_invocation"):
            return self.text(node)
        if t == "array_creation_expression":
            kind = self.value(node.child_by_field_name("type"), True)
            return f"new {kind}[]{self.value(node.child_by_field_name('value'), True)}"
        if t == "object_creation_expression":
            kind = self.value(node.child_by_field_name("type"), True)
            args = node.child_by_field_name("arguments")
            if args is None:
                return f"new {kind}()"
            inner = [self.value(c, True) for c in args.children if c.type not in (",", "(", ")")]
            return f"new {kind}({', '.join(inner)})"
        if t == "set":
            return "{" + ", ".join(self.value(c, True) for c in node.children if c.type not in (",", "set")) + "}"
        if node.child_count > 0:
            return "".join(self.value(c, True) for c in node.children)
        return self.text(node)

    def arguments(self, node) -> dict:
        args: dict = {}
        for child in node.children:
            if child.type == "assignment_expression":
                key, value = self.text(child.children[0]), self.value(child.children[2])
            elif child.type in ("identifier", "class_literal", "set"):
                key, value = None, self.value(child)
            else:
                continue
            if key in args:
                raise DecodeError("Multiple arguments with the same name are not supported.")
            args[key] = value
        return args

    def first_call(self, node):
        if node.type == "method_invocation":
            name = self.text(node.child_by_field_name("name"))
            obj = node.child_by_field_name("object")
            if obj is not None:
                name = f"{self.text(obj)}.{name}"
            args = node.child_by_field_name("arguments")
            return [{name: self.arguments(args)}] if args is not None else None
        for child in node.children:
            found = self.first_call(child)
            if found:
                return found
        return None


def decode_javascript(text: str):
    """BFCL's ``ast_parse(..., JAVASCRIPT)`` on a prompt-based answer: a one-call list, or None."""
    source, p = bracketed(text)[1:-1], parser("javascript")
    try:
        root = _parse(p, "javascript", source)
        if root.type != "program":
            return None
        for statement in root.children:
            if statement.type != "expression_statement":
                continue
            for expr in statement.children:
                if expr.type == "call_expression":
                    name = expr.children[0].text.decode("utf-8")
                    return [{name: _js_arguments(expr.children[1])}]
        return None
    except DecodeError:
        raise
    except Exception as e:  # noqa: BLE001
        raise DecodeError(f"{type(e).__name__}: {e}") from None


def _js_arguments(node) -> dict:
    args: dict = {}
    for child in node.children:
        if child.type == "assignment_expression":
            key, value = child.children[0].text.decode("utf-8"), child.children[2].text.decode("utf-8")
            if (value.startswith('"') and value.endswith('"')) or (value.startswith("'") and value.endswith("'")):
                value = value[1:-1]
        elif child.type in ("identifier", "true"):
            key, value = None, child.text.decode("utf-8")
        else:
            continue
        if key in args:
            raise DecodeError("Multiple arguments with the same name are not supported.")
        args[key] = value
    return args
