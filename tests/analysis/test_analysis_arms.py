"""The commands comparing arms (gap, compare, crossover, speedup) share one start: load the rows,
label the arms, tune per cell (:func:`harness.analysis.questions.query.arms_tuned`), written once;
each ``harness analyze`` command is an entry of the question registry answered by its own module."""

from __future__ import annotations

import ast
import importlib
import inspect

import pytest

from harness.analysis.questions import query
from harness.analysis.questions.registry import QUESTIONS
from harness.analysis.rows.selectors import Selector

A = Selector("optimizer=adamw", (("optimizer", "adamw"),))
B = Selector("optimizer=sgd", (("optimizer", "sgd"),))
CALLS = {
    "gap": {"baseline": A, "reference": B},
    "compare": {"a": A, "b": B},
    "crossover": {"a": A, "b": B, "x": "batch_size"},
    "speedup": {"a": A, "b": B},
}


class Started(Exception):
    pass


@pytest.mark.parametrize("name", sorted(CALLS))
def test_each_arm_command_starts_with_arms_tuned(monkeypatch, name):
    seen = []

    def arms_tuned(q, arms, by, over, **kw):
        seen.append((sorted(arms), list(by), kw.get("x")))
        raise Started

    monkeypatch.setattr(query, "arms_tuned", arms_tuned)
    with pytest.raises(Started):
        QUESTIONS[name].answerer()(query.Query(grid="g"), by=["model"], **CALLS[name])
    x = CALLS[name].get("x") or ("tokens" if name == "speedup" else None)
    assert seen == [(sorted(f"--{k}" for k in CALLS[name] if k != "x"), ["model"], x)]


def _callers(module: object, names: set[str]) -> dict[str, set[str]]:
    """For each function name in ``names``: the functions of ``module`` that call it."""
    tree = ast.parse(inspect.getsource(module))  # type: ignore[arg-type]
    found: dict[str, set[str]] = {n: set() for n in names}
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        for node in ast.walk(fn):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name in found:
                    found[name].add(fn.name)
    return found


def test_rows_are_loaded_and_labelled_in_one_place():
    callers = _callers(query, {"load", "label_arms", "tuned_by"})
    assert callers == {
        "load": {"arms_tuned"},
        "label_arms": {"arms_tuned"},
        "tuned_by": {"arms_tuned"},
    }
    for name in CALLS:
        module = importlib.import_module(QUESTIONS[name].answerer().__module__)
        used = _callers(module, {"load", "label_arms", "tuned_by", "arms_tuned"})
        assert used == {
            "load": set(),
            "label_arms": set(),
            "tuned_by": set(),
            "arms_tuned": {"answer"},
        }, name


def test_the_cli_builds_every_command_from_the_registry():
    from harness.cli.analyze import analyze

    assert sorted(analyze.commands) == sorted(name for name, _ in QUESTIONS.items())
    source = inspect.getsource(importlib.import_module("harness.cli.analyze"))
    assert "@analyze.command" not in source
