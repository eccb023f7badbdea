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


def test_the_card_leaves_out_a_gap_section_that_does_not_apply() -> None:
    """Issue 38: the card carried "Gap closure: it needs a baseline (SGD)"."""
    from harness.bench.card import without_empty_gap

    page = (
        '<nav><a href="#best">Best</a><a href="#gap">Gap closure</a></nav>'
        '<section id="best"><h2>Best</h2></section>'
        '<section id="gap"><h2>Gap closure</h2><p>no gap table: it needs a baseline (SGD)</p>'
        '</section><section id="curves"></section>'
    )
    out = without_empty_gap(page)
    assert "Gap closure" not in out and 'id="best"' in out and 'id="curves"' in out
    kept = page.replace("no gap table: it needs a baseline (SGD)", "<table></table>")
    assert without_empty_gap(kept) == kept


def test_the_first_line_says_what_trains_at_local_scale() -> None:
    """Issue 38: the bench opened with "AdamW: 32 tuning run(s) have no result yet: nothing
    planned until they finish ... 0 new run(s) planned" before anything trained."""
    from harness.bench.phases import ArmPlan, Plan
    from harness.bench.render import opening_line

    arms = (ArmPlan("AdamW", False, 32, 32, 0), ArmPlan("Lion", True, 32, 0, 0))
    p = Plan("bench_laptop", Path("g.yaml"), arms, 4, 8, 1, 3, 6, 1e13, 0.0, "A100", 0.4)
    line = opening_line(p, "local scale")
    assert line.startswith("bench_laptop (local scale): training at most 104 runs of 136: ")
    assert "32 tuning run(s) now (Lion 32)" in line and "AdamW" not in line
    assert "CPU-hours" in line and "an estimate" in line
