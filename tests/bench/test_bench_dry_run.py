"""``harness bench --dry-run`` runs the preflight (issue 38, item 3): every configuration of
every arm is built and stepped before anything trains, each printed with what tells it from
the others; a candidate whose step fails is refused at the dry run (before: exit 0, and a
refusal only at launch)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main

BROKEN = """\
import torch


class Broken(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, weight_decay=0.0):
        super().__init__(params, {"lr": lr, "weight_decay": weight_decay})

    def step(self, closure=None):
        raise RuntimeError("step is broken")
"""


def _bench(tmp_path: Path, candidate: str, code: int) -> str:
    r = CliRunner().invoke(
        main,
        ["bench", candidate, "--scale", "local", "--dry-run", "--results", str(tmp_path / "r")],
    )
    assert r.exit_code == code, r.output
    return r.output


@pytest.mark.slow
def test_the_dry_run_steps_every_configuration_naming_what_differs(tmp_path: Path) -> None:
    out = _bench(tmp_path, "schedulefree:AdamWScheduleFree", code=0)
    assert "preflight: 4 optimizer configuration(s) built and stepped" in out
    lines = [s for s in out.splitlines() if s.startswith("  ok: arm schedulefree")]
    assert len(lines) == 2 and len(set(lines)) == 2, out
    assert any("weight_decay=0.1" in s for s in lines) and any(
        "weight_decay=0.0" in s for s in lines
    )


@pytest.mark.slow
def test_the_dry_run_refuses_a_candidate_whose_step_fails(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "broken.py").write_text(textwrap.dedent(BROKEN))
    monkeypatch.chdir(tmp_path)
    out = _bench(tmp_path, "./broken.py:Broken", code=2)
    assert "preflight" in out and "RuntimeError: step is broken" in out
