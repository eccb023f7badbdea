"""The CLI wraps the library (issue 40, item 4): every command module imports ``harness.api``,
its own modules and the core, never the layers below the API (the bench included: ``harness
bench`` calls ``api.bench`` once), and the import contract that says so has no exception.
``lint-imports`` keeps the contract (tests/system/test_architecture.py breaks a copy); this reads
the imports of the source directly, in a second."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CONTRACT = "The CLI wraps the library"
ALLOWED = ("harness.api", "harness.cli", "harness.core", "harness.analysis")
"""What a command module may import of the harness (the analysis: the question and figure
registries that ``analyze`` and ``figures`` read their options from)."""


def _contract() -> dict[str, object]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    [found] = [
        c for c in config["tool"]["importlinter"]["contracts"] if c["name"].startswith(CONTRACT)
    ]
    return found


def _harness_imports(path: Path) -> set[str]:
    """Every ``harness...`` module ``path`` imports, lazily or not."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
    return {n for n in names if n == "harness" or n.startswith("harness.")}


def _below_the_api(name: str) -> bool:
    if name in ("harness", "harness.api"):
        return False
    return not any(name == a or name.startswith(a + ".") for a in ALLOWED)


def test_the_cli_contract_has_no_exception_and_forbids_the_bench() -> None:
    """Before: ``harness.cli.bench -> harness.data.catalogue`` was ignored, and the command
    imported ``harness.bench`` (derive, plan, run, judge, render, card) to sequence the bench."""
    contract = _contract()
    assert not contract.get("ignore_imports"), contract.get("ignore_imports")
    forbidden = set(contract["forbidden_modules"])  # type: ignore[call-overload]
    assert {"harness.bench", "harness.services", "harness.data", "harness.store"} <= forbidden


def test_no_command_imports_a_layer_below_the_api() -> None:
    found = {
        f"{p.relative_to(REPO)} -> {name}"
        for p in sorted((REPO / "harness" / "cli").glob("*.py"))
        for name in _harness_imports(p)
        if _below_the_api(name)
    }
    assert not found, sorted(found)


def test_the_bench_command_calls_api_bench_once() -> None:
    source = (REPO / "harness" / "cli" / "bench.py").read_text()
    calls = [
        n
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "bench"
    ]
    assert len(calls) == 1 and ast.unparse(calls[0].func) == "api.bench"
