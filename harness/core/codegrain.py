"""The code a result depends on, at the grain of a class: what :func:`class_code` returns for an
optimizer class (or a model's builder function) is the code that decides what it computes.

Covered, for the class and each of its bases outside the standard library and torch:

- its own definition (``class X: ...``, every method), comments, docstrings and formatting
  excluded;
- the module-level functions, classes and assignments its code names, and theirs, transitively,
  in the same module;
- the module's imports (an import that changes names the code reads).

Not covered (they do not make a result stale): other classes and functions of the same file that
its code does not name. Code reached by other means (a function looked up by a string, a module
attribute read through another module) is not followed: a class that cannot be found in its
file's syntax tree falls back to the whole file, the safe answer.
"""

from __future__ import annotations

import ast
import inspect
import sys
from pathlib import Path

_SKIPPED_TOPS = ("builtins", "torch")


def _counted(module: str) -> bool:
    top = module.partition(".")[0]
    return top not in sys.stdlib_module_names and top not in _SKIPPED_TOPS


def strip_docstrings(tree: ast.AST) -> None:
    """Remove the docstrings of every module, class and function in ``tree`` (in place)."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list) or not body:
            continue
        first = body[0]
        docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
        if docstring and isinstance(first.value.value, str):
            node.body = body[1:] or [ast.Pass()]  # type: ignore[attr-defined]


def _top_level(tree: ast.Module) -> dict[str, ast.stmt]:
    """Name -> the module-level statement defining it (functions, classes, assignments)."""
    out: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        out[n.id] = node
    return out


def _definition(path: Path, name: str) -> str | None:
    """The normalized code of top-level ``name`` of ``path`` with what it names in that module
    (see the module doc); None when ``name`` is not defined at the top level there."""
    tree = ast.parse(path.read_text())
    strip_docstrings(tree)
    top = _top_level(tree)
    if name not in top:
        return None
    seen: list[ast.stmt] = []
    todo = [top[name]]
    while todo:
        node = todo.pop()
        if any(node is s for s in seen):
            continue
        seen.append(node)
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        todo += [top[n] for n in sorted(names) if n in top]
    imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    return "\n".join(ast.dump(n, annotate_fields=False) for n in [*imports, *seen])


def class_code(obj: object) -> list[str]:
    """The code ``obj`` (a class or a function) runs, one normalized string per class of its MRO
    (or the function) outside the standard library and torch."""
    classes = obj.__mro__ if isinstance(obj, type) else (obj,)
    parts = []
    for c in classes:
        module = getattr(c, "__module__", "") or ""
        if not _counted(module):
            continue
        source = inspect.getsourcefile(c)  # type: ignore[arg-type]
        if not source:
            continue
        path = Path(source).resolve()
        name = getattr(c, "__qualname__", "").partition(".")[0]
        code = _definition(path, name)
        if code is None:  # not found at the top level: the whole file
            tree = ast.parse(path.read_text())
            strip_docstrings(tree)
            code = ast.dump(tree, annotate_fields=False)
        parts.append(code)
    return parts
