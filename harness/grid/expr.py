"""Arithmetic expressions in grid values, e.g. ``warmup_steps: "0.1 * steps"``.

Only numbers, names of other run fields, ``+ - * / // % **``, parentheses and a few math
functions are allowed; anything else is a :class:`~harness.core.errors.UserError`. Nothing is
``eval``-ed.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from functools import lru_cache

from harness.core.errors import UserError

_BINOPS: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type, Callable[[float], float]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}
FUNCTIONS: dict[str, Callable[..., float]] = {
    "min": min,
    "max": max,
    "round": round,
    "int": int,
    "sqrt": math.sqrt,
    "log": math.log,
    "log2": math.log2,
    "exp": math.exp,
}


@lru_cache(maxsize=4096)
def parse(text: str) -> ast.Expression:
    """Parse an expression once (grids repeat the same expression for every run)."""
    try:
        return ast.parse(text, mode="eval")
    except SyntaxError:
        raise UserError(f"cannot parse expression {text!r}") from None


@lru_cache(maxsize=4096)
def names_in(text: str) -> frozenset[str]:
    """Field names an expression refers to (function names excluded)."""
    tree = parse(text)
    called = {
        n.func.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    }
    return frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in called)


def evaluate(text: str, env: Mapping[str, float]) -> float:
    """Evaluate ``text`` with field values from ``env``.

    Raises:
        UserError: a name that is not in ``env``, a disallowed construct, or a math error.
    """
    try:
        return _eval(parse(text).body, env)
    except (ZeroDivisionError, OverflowError, ValueError, TypeError) as e:
        if isinstance(e, UserError):
            raise
        raise UserError(f"expression {text!r} failed: {e}") from None


def _eval(node: ast.AST, env: Mapping[str, float]) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            known = ", ".join(sorted(env))
            raise UserError(f"unknown name {node.id!r} in expression; numeric fields: {known}")
        return env[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_eval(node.left, env), _eval(node.right, env))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand, env))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in FUNCTIONS
        and not node.keywords
    ):
        return FUNCTIONS[node.func.id](*(_eval(a, env) for a in node.args))
    raise UserError(
        f"unsupported expression element {ast.unparse(node)!r}; allowed: numbers, field names, "
        f"+ - * / // % **, and {', '.join(FUNCTIONS)}"
    )
