"""A spec's ``value``: arithmetic over measurement names, read by ``ast``, never ``eval``.

Allowed: names, numbers, ``+ - * /``, unary minus, parentheses, ``max(..)``, ``min(..)``,
``abs(..)``. Division by zero raises ``ZeroDivisionError`` for the check to map to its
``zero_division`` outcome.

Example:
    >>> evaluate("100 * errors / attempts", {"errors": 3.0, "attempts": 60.0})
    5.0
    >>> sorted(names("max(a, b) - min(a, b)"))
    ['a', 'b']
"""

from __future__ import annotations

import ast
import functools
import operator

from sopgraph.tools.spec.errors import SpecError

_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv}  # fmt: skip
_FUNCS = {"max": max, "min": min, "abs": abs}
LIMIT = 200  # characters: a value is a short formula, not a program


# a search runs a few formulas on many inputs; the trees are never changed, so they are shared
@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> ast.expr:
    if len(text) > LIMIT:
        raise SpecError(f"value: longer than {LIMIT} characters")
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError as exc:
        raise SpecError(f"value: {text!r} is not a formula ({exc.msg})") from None
    for node in ast.walk(tree):
        ok = isinstance(
            node,
            ast.BinOp | ast.UnaryOp | ast.Name | ast.Constant | ast.Call | ast.Load
            | ast.operator | ast.unaryop,
        )  # fmt: skip
        if isinstance(node, ast.BinOp) and type(node.op) not in _BIN:
            ok = False
        if isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.USub | ast.UAdd):
            ok = False
        if isinstance(node, ast.Constant) and (
            isinstance(node.value, bool) or not isinstance(node.value, int | float)
        ):
            ok = False
        if isinstance(node, ast.Call) and (
            not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS or node.keywords
        ):
            ok = False
        if not ok:
            raise SpecError(
                f"value: {text!r} uses {ast.unparse(node) if isinstance(node, ast.expr) else type(node).__name__}; "
                "a value is names, numbers, + - * /, max(), min(), abs()"
            )
    return tree


def names(text: str) -> set[str]:
    """The measurement names ``text`` reads (function names excluded)."""
    tree = _parse(text)
    funcs = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in funcs}


def evaluate(text: str, values: dict[str, float]) -> float:
    """``text`` with ``values`` bound; raises ZeroDivisionError on a zero divisor."""
    return float(_eval(_parse(text), values))


def _eval(node: ast.expr, values: dict[str, float]) -> float:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return values[node.id]
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, values)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        return _BIN[type(node.op)](_eval(node.left, values), _eval(node.right, values))
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    return _FUNCS[node.func.id](*(_eval(a, values) for a in node.args))
