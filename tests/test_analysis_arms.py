"""The commands comparing arms (gap, compare, crossover, speedup) share one start: load the rows,
label the arms, tune per cell (:func:`harness.analysis.commands.arms_tuned`), written once."""

from __future__ import annotations

import ast
import inspect

import pytest

from harness.analysis import commands
from harness.analysis.select import Selector

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

    monkeypatch.setattr(commands, "arms_tuned", arms_tuned)
    with pytest.raises(Started):
        getattr(commands, name)(commands.Query(grid="g"), by=["model"], **CALLS[name])
    x = CALLS[name].get("x") or ("tokens" if name == "speedup" else None)
    assert seen == [(sorted(f"--{k}" for k in CALLS[name] if k != "x"), ["model"], x)]


def test_rows_are_loaded_and_labelled_in_one_place():
    tree = ast.parse(inspect.getsource(commands))
    callers: dict[str, set[str]] = {"load": set(), "label_arms": set(), "tuned_by": set()}
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in callers:
                callers[node.func.id].add(fn.name)
    assert callers == {"load": {"best", "arms_tuned"}, "label_arms": {"arms_tuned"},
                       "tuned_by": {"arms_tuned"}}  # fmt: skip
