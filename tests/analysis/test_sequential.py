"""Sequential confirmation seeds (:mod:`harness.analysis.stats.sequential`), by seeded
simulation of the paper protocol's shape (6 cells, stages of 3, 5 and 8 seeds per arm, paired
by seed with correlation 0.8 between the arms): the family-wise error over the stages, the
power at a true difference of 3 seed sds within the cap, and the seeds it costs.

``python tests/analysis/test_sequential.py`` prints the table of ``docs/statistics.md``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.analysis.stats.sequential import (
    OBRIEN_FLEMING,
    POCOCK,
    SequentialDesign,
    sequential_cell,
)

CELLS = 6


def simulate(
    benches: int, design: SequentialDesign, *, shift: float, rho: float = 0.8, seed: int = 0
) -> dict[str, float]:
    """Any better/worse reading per bench, per-cell reading rate, mean seeds per arm and
    cell, share of cells stopped at each stage."""
    rng = np.random.default_rng(seed)
    shape = (benches, CELLS, design.cap)
    shared = rng.normal(size=shape)
    a = math.sqrt(rho) * shared + math.sqrt(1 - rho) * rng.normal(size=shape)
    b = shift + math.sqrt(rho) * shared + math.sqrt(1 - rho) * rng.normal(size=shape)
    any_read = read = seeds = 0
    stops = np.zeros(len(design.stages))
    for i in range(benches):
        out = sequential_cell(list(a[i]), list(b[i]), design)
        n = sum(c.reading in ("lower", "higher") for c in out)
        any_read += n > 0
        read += n
        seeds += sum(c.seeds for c in out)
        for c in out:
            stops[c.stage] += 1
    cells = benches * CELLS
    rate = any_read / benches
    return {
        "any": rate,
        "mc": math.sqrt(max(rate * (1 - rate), 1e-4) / benches),
        "per_cell": read / cells,
        "seeds": seeds / cells,
        **{f"stop{k}": s / cells for k, s in enumerate(stops)},
    }


def test_a_cell_stops_at_the_first_stage_that_reads_it() -> None:
    rng = np.random.default_rng(0)
    shared = rng.normal(size=(2, 8))
    a = [shared[0], shared[1]]
    b = [shared[0] + 5 + rng.normal(0, 0.1, 8), shared[1] + rng.normal(0, 0.1, 8)]
    out = sequential_cell(a, b, OBRIEN_FLEMING)
    assert (out[0].stage, out[0].seeds, out[0].reading) == (0, 3, "higher")
    assert (out[1].stage, out[1].seeds) == (2, 8)  # no difference: to the cap
    assert out[1].reading == "no evidence"
    with pytest.raises(ValueError, match="summing to 1"):
        SequentialDesign((3, 5), (0.5, 0.6))


def test_aa_family_wise_error_over_the_stages_is_quick_to_check() -> None:
    r = simulate(300, OBRIEN_FLEMING, shift=0.0, seed=1)
    assert r["any"] <= 0.05 + 2 * r["mc"], r


@pytest.mark.slow
@pytest.mark.parametrize("design", [OBRIEN_FLEMING, POCOCK], ids=["obf", "pocock"])
def test_family_wise_error_holds_and_power_at_3_sd_reaches_80_percent(
    design: SequentialDesign,
) -> None:
    null = simulate(2000, design, shift=0.0, seed=2)
    assert null["any"] <= 0.05 + 2 * null["mc"], null
    alt = simulate(1000, design, shift=3.0, seed=3)
    assert alt["per_cell"] >= 0.80, alt  # within the cap of 8 seeds (3 seeds alone: 71%)
    assert alt["seeds"] < 5, alt  # most cells stop early


def _table() -> str:
    rows = [
        "| design (stages 3, 5, 8) | true difference | any better/worse per bench | per cell "
        "| mean seeds per arm | stopped at 3 / 5 / 8 |",
        "|---|---|---|---|---|---|",
    ]
    for name, design in (
        ("O'Brien-Fleming-like (3/16, 5/16, 8/16)", OBRIEN_FLEMING),
        ("Pocock-like (1/3 each)", POCOCK),
    ):
        for shift in (0.0, 3.0):
            r = simulate(2000, design, shift=shift, seed=7)
            rows.append(
                f"| {name} | {shift:g} sd | {r['any']:.3f} ± {r['mc']:.3f} | {r['per_cell']:.3f} "
                f"| {r['seeds']:.2f} | {r['stop0']:.2f} / {r['stop1']:.2f} / {r['stop2']:.2f} |"
            )
    return "\n".join(rows)


if __name__ == "__main__":
    print(_table())
