"""A workload given by file with hostile parameters (issue 29, "not yet attacked"): values its
constructor's annotations refuse, non-finite floats, and an int that no 64-bit column holds
(which used to pass expansion and the preflight and end ``submit`` in a pyarrow traceback while
writing the manifest) are each one line, exit 2, nothing written."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main

WORKLOAD = '''
import torch
from torch import nn


class Line:
    """A least-squares line; ``unused`` reaches no tensor (so no preflight can refuse it)."""

    def __init__(self, dim: int = 4, gain: float = 1.0, mode: str = "a", unused: int = 0) -> None:
        self.dim = dim

    def model(self, seed):
        return nn.Linear(self.dim, 1)

    def batch(self, seed, step, size):
        return torch.randn(size, self.dim, generator=torch.Generator().manual_seed(seed + step))

    def loss(self, model, batch):
        return model(batch).pow(2).mean()

    def evaluate(self, model):
        return {}

    def reference_loss(self, model):
        return 0.0
'''

HOSTILE = {
    "unused: 100000000000000000000000": "unused: 100000000000000000000000 does not fit a 64-bit",
    "unused: 1.0e30": "does not fit a 64-bit integer",
    "unused: -9223372036854775809": "does not fit a 64-bit integer",
    "gain: .nan": "gain: nan is not a finite number",
    "gain: 1.0e400": "gain: inf is not a finite number",
    'dim: "abc"': "dim: expected int, got the string 'abc'",
    "dim: true": "dim: expected int, got bool True",
    "mode: 5": "mode: expected str, got int 5",
}


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_workload_parameter_is_one_line_and_nothing_is_written(tmp_path, value):
    (tmp_path / "line.py").write_text(WORKLOAD)
    grid = tmp_path / "wl.yaml"
    grid.write_text(
        textwrap.dedent(f"""
        name: wl
        base: {{workload: ./line.py:Line, steps: 4, optimizer: sgd, lr: 0.01, {value}}}
        """)
    )
    root = tmp_path / "results"

    r = CliRunner().invoke(
        main, ["submit", str(grid), "--launcher", "local", "--results", str(root)]
    )

    assert r.exit_code == 2, r.output
    assert r.stderr.count("\n") == 1 and HOSTILE[value] in r.stderr, r.stderr
    assert not (root / "wl").exists()


def test_the_largest_64_bit_value_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "line.py").write_text(WORKLOAD)
    grid = tmp_path / "wl.yaml"
    grid.write_text(
        "name: wl\nbase: {workload: ./line.py:Line, steps: 4, optimizer: sgd, "
        "lr: 0.01, unused: 9223372036854775807}\n"
    )
    r = CliRunner().invoke(main, ["submit", str(grid), "--launcher", "local", "--dry-run"])
    assert r.exit_code == 0, r.output
