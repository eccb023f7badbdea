"""``--extend`` bounds (issue 29, item 5): the next value is clipped to the bound on the edge's
side only, never planned inside the searched range; a bound that excludes the best is one line;
non-finite bounds are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.core.errors import UserError
from harness.followup.planning import plan_extension
from harness.grid.followup import ExtendSpec
from tests.followup.test_extend import EXTEND_GRID, extend_until_done, grid, quadratic, synthetic
from tests.inprocess import runs_in_process  # noqa: F401  # the fixture, by name

pytestmark = pytest.mark.usefixtures("runs_in_process")  # runs train in the test's process

SEARCHED = (1e-4, 1e-2)
"""The grid's lr range (adamw's best is 1e-2 on the largest edge, sgd's 1e-4 on the smallest)."""


def test_a_bound_below_the_best_is_one_line_and_plans_nothing_inside(tmp_path: Path) -> None:
    g = grid(tmp_path, EXTEND_GRID)
    start = {r.run_id: r for r in g.runs}

    rounds, _, last = extend_until_done(start, ExtendSpec(bounds=(("lr", 1e-5, 5e-3),)))

    assert rounds == [[1e-5]]  # sgd's edge only: adamw's best 0.01 is above the bound 0.005
    (line,) = [ln for ln in last if "outside" in ln]
    assert "lr=0.01 lies outside extend.bounds.lr [1e-05, 0.005]: not extended" in line


def test_a_bound_above_the_best_never_jumps_to_it(tmp_path: Path) -> None:
    g = grid(tmp_path, EXTEND_GRID)
    runs = {r.run_id: r for r in g.runs}

    plan = plan_extension(synthetic(g.runs, quadratic), runs, ExtendSpec(bounds=(("lr", 0.5, 1),)))

    assert plan.runs == ()  # not 0.5, a jump of 1.7 decades from the best 0.01
    assert sum("lies outside extend.bounds.lr [0.5, 1]" in ln for ln in plan.lines) == 2


def test_the_next_value_is_clipped_to_the_bound_beyond_the_best(tmp_path: Path) -> None:
    g = grid(tmp_path, EXTEND_GRID)
    runs = {r.run_id: r for r in g.runs}
    spec = ExtendSpec(bounds=(("lr", 5e-5, 0.05),))

    plan = plan_extension(synthetic(g.runs, quadratic), runs, spec)

    planned = sorted({r.optim.lr for r in plan.runs})
    assert planned == [5e-5, 0.05]
    assert not any(SEARCHED[0] < lr < SEARCHED[1] for lr in planned)


@pytest.mark.parametrize("pair", ["[.nan, .nan]", "[0, .inf]", "[-.inf, 1.0]", "[.nan, 1.0]"])
def test_non_finite_bounds_are_refused(tmp_path: Path, pair: str) -> None:
    with pytest.raises(UserError, match=r"extend.bounds.lr: expected \[low, high\], finite"):
        grid(tmp_path, "grid: {lr: [1.0e-3, 1.0e-2]}\nextend: {bounds: {lr: " + pair + "}}\n")
