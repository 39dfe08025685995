"""A prompt-based model's answer text -> function calls, as BFCL decodes it (our port).

BFCL (model_handler/utils.py ``default_decode_ast_prompting`` and ``ast_parse``): strip backticks,
newlines and spaces from both ends, wrap the text in ``[...]`` unless it already starts/ends so,
then parse it as a Python expression. A call gives ``{name: {keyword: value}}`` (dotted names kept,
positional arguments dropped, ``**x`` as the key ``None``); a list or tuple must hold only calls.
Argument values: constants; ``-x`` is the negated constant (for any unary operator, as BFCL has
it); lists, dicts and tuples recursively; a bare name is its text; a call without keywords its
source text, with keywords a nested ``{name: {...}}``; ``a[b]`` its source text; arithmetic
(``BinOp``) its value. Anything else (attributes, comparisons, f-strings, lambdas, sets) fails the
decode. Java and JavaScript answers are decoded by ``decode_tree``.

One deliberate difference: BFCL computes arithmetic arguments with Python's ``eval`` on the
model's text, in its own module namespace (so ``open(...)`` or ``os.system(...)`` inside
``1 + ...`` would run). Here arithmetic is computed by a small evaluator of constants, operators,
containers and a few pure builtins (``abs``, ``round``, ``min``, ``max``, ``int``, ``float``,
``str``, ``bool``, ``len``, ``sum``), with size limits; any other name or call fails the decode
(where BFCL's ``eval`` would raise ``NameError`` for all but its module's imports).
"""
from __future__ import annotations

import ast
import operator as op

MAX_POWER_BITS = 4096      # 2 ** 4096: plenty for arguments, refuses 9 ** 9 ** 9
MAX_SEQUENCE = 1_000_000   # "ab" * n, [0] * n


class DecodeError(ValueError):
    """The answer is not a list of function calls (BFCL: "Failed to decode AST")."""


def bracketed(text: str) -> str:
    """BFCL's pre-processing of a prompt-based answer before parsing."""
    text = text.strip("`\n ")
    if not text.startswith("["):
        text = "[" + text
    if not text.endswith("]"):
        text = text + "]"
    return text


def decode_python(text: str) -> list[dict]:
    """The calls of a Python-format answer; ``DecodeError`` when BFCL's decoder would raise."""
    try:
        tree = ast.parse(bracketed(text).strip().strip("'"), mode="eval")
        body = tree.body
        if isinstance(body, ast.Call):
            return [resolve_call(body)]
        if not isinstance(body, (ast.List, ast.Tuple, ast.Set)):
            raise DecodeError(f"not a list of calls: {type(body).__name__}")
        out = []
        for elem in body.elts:
            if not isinstance(elem, ast.Call):
                raise DecodeError(f"not a call: {type(elem).__name__}")
            out.append(resolve_call(elem))
        return out
    except DecodeError:
        raise
    except Exception as e:  # noqa: BLE001 (SyntaxError, RecursionError, TypeError...: all a failed decode)
        raise DecodeError(f"{type(e).__name__}: {e}") from None


def resolve_call(node: ast.Call) -> dict:
    parts, f = [], node.func
    while isinstance(f, ast.Attribute):
        parts.append(f.attr)
        f = f.value
    if isinstance(f, ast.Name):
        parts.append(f.id)
    return {".".join(reversed(parts)): {kw.arg: resolve_value(kw.value) for kw in node.keywords}}


def resolve_value(node):
    """An argument's value as BFCL's ``resolve_ast_by_type`` gives it."""
    if isinstance(node, ast.Constant):
        return "..." if node.value is Ellipsis else node.value
    if isinstance(node, ast.UnaryOp):
        operand = node.operand
        if not isinstance(operand, ast.Constant):  # BFCL: -operand.value fails on any other node
            raise DecodeError(f"unary operator on {type(operand).__name__}")
        return -operand.value
    if isinstance(node, ast.List):
        return [resolve_value(v) for v in node.elts]
    if isinstance(node, ast.Dict):
        return {resolve_value(k): resolve_value(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.BinOp):
        return arithmetic(node)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return ast.unparse(node) if not node.keywords else resolve_call(node)
    if isinstance(node, ast.Tuple):
        return tuple(resolve_value(v) for v in node.elts)
    if isinstance(node, ast.Subscript):
        return ast.unparse(node.value) + "[" + ast.unparse(node.slice) + "]"
    raise DecodeError(f"unsupported argument: {type(node).__name__ if node is not None else '**'}")


_BIN = {ast.Add: op.add, ast.Sub: op.sub, ast.Mult: op.mul, ast.Div: op.truediv, ast.FloorDiv: op.floordiv,
        ast.Mod: op.mod, ast.Pow: op.pow, ast.LShift: op.lshift, ast.RShift: op.rshift, ast.BitOr: op.or_,
        ast.BitXor: op.xor, ast.BitAnd: op.and_, ast.MatMult: op.matmul}
_UNARY = {ast.USub: op.neg, ast.UAdd: op.pos, ast.Not: op.not_, ast.Invert: op.invert}
_CMP = {ast.Eq: op.eq, ast.NotEq: op.ne, ast.Lt: op.lt, ast.LtE: op.le, ast.Gt: op.gt, ast.GtE: op.ge,
        ast.Is: op.is_, ast.IsNot: op.is_not, ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
_BUILTINS = {f.__name__: f for f in (abs, round, min, max, int, float, str, bool, len, sum)}


def arithmetic(node):
    """The value Python's ``eval`` gives an expression of constants, without running any code."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.BinOp):
        a, b = arithmetic(node.left), arithmetic(node.right)
        _check_size(node.op, a, b)
        return _BIN[type(node.op)](a, b)
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](arithmetic(node.operand))
    if isinstance(node, ast.BoolOp):
        value = arithmetic(node.values[0])
        for v in node.values[1:]:
            if bool(value) == isinstance(node.op, ast.Or):
                break
            value = arithmetic(v)
        return value
    if isinstance(node, ast.Compare):
        left = arithmetic(node.left)
        for o, c in zip(node.ops, node.comparators):
            right = arithmetic(c)
            if not _CMP[type(o)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return arithmetic(node.body) if arithmetic(node.test) else arithmetic(node.orelse)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [arithmetic(e) for e in node.elts]
        return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](items)
    if isinstance(node, ast.Dict):
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                out.update(arithmetic(v))
            else:
                out[arithmetic(k)] = arithmetic(v)
        return out
    if isinstance(node, ast.Subscript):
        return arithmetic(node.value)[arithmetic(node.slice)]
    if isinstance(node, ast.Slice):
        return slice(*(arithmetic(x) if x is not None else None for x in (node.lower, node.upper, node.step)))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _BUILTINS:
        args = [arithmetic(a) for a in node.args]
        kwargs = {k.arg: arithmetic(k.value) for k in node.keywords if k.arg}
        if len(kwargs) != len(node.keywords):
            raise DecodeError("** in a call")
        return _BUILTINS[node.func.id](*args, **kwargs)
    raise DecodeError(f"not computed in arithmetic: {type(node).__name__}")


def _check_size(o: ast.operator, a, b) -> None:
    if isinstance(o, ast.Pow) and isinstance(a, int) and isinstance(b, int) and b > 0 \
            and abs(a) > 1 and b * abs(a).bit_length() > MAX_POWER_BITS:
        raise DecodeError("power too large to compute")
    if isinstance(o, ast.LShift) and isinstance(b, int) and b > MAX_POWER_BITS:
        raise DecodeError("shift too large to compute")
    if isinstance(o, ast.Mult):
        for seq, n in ((a, b), (b, a)):
            if isinstance(seq, (str, bytes, list, tuple)) and isinstance(n, int) and len(seq) * n > MAX_SEQUENCE:
                raise DecodeError("repetition too large to compute")
