"""A built-in optimizer's constructor read from its module's source, without importing the module
(which imports torch): planning a grid of built-in optimizers (``submit --dry-run``, 10,000 runs
in about a second) stays torch-free, while the constructor remains the only declaration.

Only the signature is rebuilt: the constructor's parameters, their annotations (as strings,
evaluated by :mod:`harness.optim.signature` like any constructor's) and their defaults, which
must be literals. A class that defines no ``__init__`` of its own, or a default that is not a
literal, is read by importing the class instead (:func:`constructor` returns None).
``tests/optim/test_any_optimizer.py`` checks that every built-in's declaration read this way
equals the one read from the imported class.
"""

from __future__ import annotations

import ast
import collections.abc
import copy
import importlib.util
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any


def constructor(ref: str) -> Callable[..., None] | None:
    """The signature of ``module:Class``'s own ``__init__``, as a function with an empty body;
    None where it cannot be read from the source alone."""
    module, _, qualname = ref.partition(":")
    found = importlib.util.find_spec(module)
    if found is None or not found.origin or not found.origin.endswith(".py"):
        return None
    tree = ast.parse(Path(found.origin).read_text(), found.origin)
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    init = _own_init(classes, qualname)
    if init is None or not all(_literal(d) for d in init.args.defaults + init.args.kw_defaults):
        return None
    stub = copy.copy(init)
    stub.body, stub.decorator_list, stub.returns = [ast.Pass()], [], None
    code = ast.unparse(ast.fix_missing_locations(ast.Module(body=[stub], type_ignores=[])))
    scope: dict[str, Any] = {**vars(typing), **vars(collections.abc)}
    exec(compile("from __future__ import annotations\n" + code, found.origin, "exec"), scope)
    fn: Callable[..., None] = scope["__init__"]
    fn.__module__, fn.__qualname__ = module, f"{qualname}.__init__"
    return fn


def _own_init(classes: dict[str, ast.ClassDef], name: str) -> ast.FunctionDef | None:
    """``name``'s ``__init__``, or its first base's where that base is a class of the same
    module (``class Adam(AdamW)``); None otherwise."""
    cls = classes.get(name)
    while cls is not None:
        for node in cls.body:
            if isinstance(node, ast.FunctionDef) and node.name == "__init__":
                return node
        first = cls.bases[0] if cls.bases else None
        cls = classes.get(first.id) if isinstance(first, ast.Name) else None
    return None


def _literal(node: ast.expr | None) -> bool:
    if node is None:  # a keyword-only argument without a default
        return True
    try:
        ast.literal_eval(node)
    except ValueError:
        return False
    return True
