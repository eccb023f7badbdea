"""Staleness at the grain of a class (issue 18, item 7): a result goes stale when the code its
optimizer class runs changes (the class, its bases, the module-level code they name), not when
another class of the same file changes; rows fingerprinted by whole files stay current."""

from __future__ import annotations

import pytest

from harness.core.provenance import class_fingerprint, code_fingerprint
from harness.core.registry import load_object
from harness.launch.inputs import stale_runs
from tests.runs import tiny_run

CODE = '''
import torch

SCALE = 0.5


def scaled(g):
    return g * SCALE


class Base(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay))


class Mine(Base):
    """Mine."""

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                p.add_(scaled(p.grad), alpha=-group["lr"])  # a comment


def other_helper(g):
    return g


class Other(Base):
    def step(self, closure=None):
        return other_helper(None)
'''

EDITS = [  # (old, new, stale?)
    ("return other_helper(None)", "return other_helper(1)", False),  # another class
    ("def other_helper(g):\n    return g", "def other_helper(g):\n    return -g", False),
    ("# a comment", "# another comment", False),
    ('"""Mine."""', '"""Mine, documented."""', False),
    ("return g * SCALE", "return g * SCALE * 2", True),  # a function it calls
    ("SCALE = 0.5", "SCALE = 0.25", True),  # a constant that function reads
    ("dict(lr=lr, weight_decay=weight_decay)", "dict(lr=lr * 2, weight_decay=weight_decay)", True),
    ('alpha=-group["lr"]', 'alpha=group["lr"]', True),  # its own code
]


@pytest.mark.parametrize(("old", "new", "stale"), EDITS)
def test_an_edit_makes_a_class_stale_only_when_its_code_changes(tmp_path, old, new, stale):
    path = tmp_path / "opts.py"
    path.write_text(CODE)
    cls = load_object(f"{path}:Mine")
    before = class_fingerprint([cls])
    assert old in CODE
    path.write_text(CODE.replace(old, new))
    assert (class_fingerprint([cls]) != before) is stale


def test_a_row_fingerprinted_by_whole_files_stays_current(tmp_path, prepared_data) -> None:
    path = tmp_path / "opts.py"
    path.write_text(CODE)
    run = tiny_run(prepared_data, optimizer=f"{path}:Mine")
    whole_file = code_fingerprint([load_object(f"{path}:Mine")])
    recorded = {run.run_id: {"optimizer_fingerprint": whole_file}}
    assert stale_runs([run], recorded, prepared_data) == []
    path.write_text(CODE.replace("return other_helper(None)", "return other_helper(1)"))
    assert [s.changed for s in stale_runs([run], recorded, prepared_data)] == [
        ("optimizer_fingerprint",)
    ]  # the file changed since that row: stale is the safe answer
