"""The results folder's layout is spelled in ``harness/core/paths.py`` only: no other module
joins a layout folder or file name onto a path, nor holds a Parquet file name or glob."""

from __future__ import annotations

import ast
from pathlib import Path

import harness

PACKAGE = Path(harness.__file__).parent
OWNER = PACKAGE / "core" / "paths.py"

#: Folder and file names of the layout (core/paths.py's module docstring).
LAYOUT_NAMES = {
    "runs",
    "curves",
    "compact",
    "compile_cache",
    "checkpoints",
    "submissions",
    "locks",
    "quarantine",
    "figures",
    "manifest.parquet",
    ".verified.json",
    ".arrivals",
    "records",
    "slurm",
    "local",
    "live",
}


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes (and of attribute docstrings: a bare string statement)."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }


def _text(node: ast.AST) -> str | None:
    """A string constant's text, or an f-string's literal parts joined (``{}`` for the rest)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_text(v) or "{}" for v in node.values)
    return None


def layout_spellings(source: str) -> list[str]:
    """The layout paths a module's code (not its docstrings) spells: a layout name joined onto
    a path with ``/``, a Parquet file name or glob anywhere in a string."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            text = _text(node.right)
            if text is not None and (text in LAYOUT_NAMES or text.endswith(".parquet")):
                found.setdefault(node.lineno, f"/ {text!r}")
        elif isinstance(node, ast.Constant | ast.JoinedStr) and id(node) not in docs:
            text = _text(node)
            if text is not None and (".parquet" in text or ".verified" in text):
                found.setdefault(node.lineno, repr(text))
    return [f"line {n}: {text}" for n, text in sorted(found.items())]


def test_only_core_paths_spells_the_results_layout() -> None:
    offenders = {
        str(p.relative_to(PACKAGE)): spelled
        for p in sorted(PACKAGE.rglob("*.py"))
        if p != OWNER and (spelled := layout_spellings(p.read_text()))
    }
    assert offenders == {}


def test_the_check_sees_a_spelled_layout() -> None:
    spelled = layout_spellings(
        "def f(root, grid, g):\n"
        '    """Reads <grid>/runs/*.parquet."""\n'
        '    a = root / grid / "runs"\n'
        '    b = g.glob("runs-*.parquet")\n'
        '    c = root / f"{grid}.parquet"\n'
    )
    assert [s.split(":")[0] for s in spelled] == ["line 3", "line 4", "line 5"]
    assert layout_spellings(OWNER.read_text())  # the owner does spell it


#: Calls that write Parquet files (pyarrow's, pandas', the store's).
PARQUET_WRITERS = {
    "write_table",
    "write_dataset",
    "ParquetWriter",
    "to_parquet",
    "atomic_write_table",
    "write_to_dataset",
}


def parquet_writes(source: str) -> list[str]:
    """The calls of a Parquet writer in a module's code, by line."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name in PARQUET_WRITERS:
                found.append(f"line {node.lineno}: {name}")
    return sorted(found)


def test_only_the_store_writes_parquet() -> None:
    """Rows, curves and manifests are written by ``harness.store`` (``harness import`` too,
    through :func:`harness.store.rows.write_imported`)."""
    store = PACKAGE / "store"
    offenders = {
        str(p.relative_to(PACKAGE)): found
        for p in sorted(PACKAGE.rglob("*.py"))
        if store not in p.parents and (found := parquet_writes(p.read_text()))
    }
    assert offenders == {}
    assert parquet_writes((store / "rows.py").read_text())  # the check sees the store's writes
