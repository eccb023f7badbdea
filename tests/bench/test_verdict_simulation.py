"""Seeded simulation of the verdict's comparison (paper-protocol shape: 6 cells, 3 against 3
confirmation seeds, one Holm family), through the very functions the bench reads its verdict
with (:func:`harness.analysis.stats.two_arm_test` per cell, :func:`~harness.analysis.stats.
correct_family` over the cells): the A/A family-wise rate of any better or worse reading with
0%, 1% and 5% of seeds diverging on both sides, identical seeds, and the per-cell power at a
true difference of 3 seed sds with seed-paired runs (correlation 0.8 between the arms).

With the sequential confirmation of the paper protocol (``seeds: stages: [3, 5, 8]``, alpha
spent by seeds), through :func:`~harness.analysis.stats.sequential_cell` (the procedure the
bench's verdict reads with, :func:`~harness.analysis.stats.sequential_family`): the same A/A
family-wise rates over the stages, the per-cell power at 3 seed sds within the cap of 8 seeds,
and the mean confirmation seeds per arm a cell used.

``python tests/bench/test_verdict_simulation.py`` prints the tables of ``docs/statistics.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from harness.analysis.stats import (
    OBRIEN_FLEMING,
    POCOCK,
    SequentialDesign,
    correct_family,
    sequential_cell,
    two_arm_test,
)

CELLS = 6
SEEDS = 3
ALPHA = 0.05


@dataclass(frozen=True)
class Rates:
    """What a simulation measured."""

    any_reading: float
    """Share of benches with a better or worse reading in some cell."""
    per_cell: float
    """Share of cells that read better or worse."""
    no_verdict: float
    """Share of cells that read no verdict."""
    mc_error: float
    """Monte Carlo standard error of ``any_reading``."""


def _seed_values(
    benches: int, seeds: int, *, shift: float, rho: float, diverge: float, rng_seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Arms a and b of ``benches`` x ``CELLS`` x ``seeds`` (module docstring of simulate)."""
    rng = np.random.default_rng(rng_seed)
    shape = (benches, CELLS, seeds)
    shared = rng.normal(size=shape)
    a = math.sqrt(rho) * shared + math.sqrt(1 - rho) * rng.normal(size=shape)
    b = shift + math.sqrt(rho) * shared + math.sqrt(1 - rho) * rng.normal(size=shape)
    a[rng.random(shape) < diverge] = np.inf
    b[rng.random(shape) < diverge] = np.inf
    return a, b


def simulate(
    benches: int,
    *,
    shift: float = 0.0,
    rho: float = 0.8,
    diverge: float = 0.0,
    seeds: int = SEEDS,
    rng_seed: int = 0,
) -> Rates:
    """``benches`` benches of ``CELLS`` cells: each arm's seed values have sd 1, the arms'
    values on one seed correlation ``rho`` (the seed a blocking factor), b is ``shift`` sds
    off, and each seed of either arm diverges (a non-finite loss) with probability
    ``diverge``."""
    a, b = _seed_values(benches, seeds, shift=shift, rho=rho, diverge=diverge, rng_seed=rng_seed)
    ids = np.arange(seeds)
    any_reading = cells_read = cells_none = 0
    for i in range(benches):
        tests = [two_arm_test(a[i, c], b[i, c], seeds_a=ids, seeds_b=ids) for c in range(CELLS)]
        tested = [t for t in tests if not math.isnan(t.p)]
        judged = correct_family(tested, alpha=ALPHA)
        n_read = sum(r.reading in ("lower", "higher") for r in judged)
        any_reading += n_read > 0
        cells_read += n_read
        # the bench reads a diverged cell without evidence as no verdict (losses not tested)
        none = sum(r.diverged and r.reading == "no evidence" for r in judged)
        cells_none += CELLS - len(tested) + none
    p = any_reading / benches
    cells = benches * CELLS
    mc = math.sqrt(max(p * (1 - p), 1e-4) / benches)
    return Rates(p, cells_read / cells, cells_none / cells, mc)


@pytest.mark.slow
@pytest.mark.parametrize("diverge", [0.0, 0.01, 0.05])
def test_aa_family_wise_rate_holds_with_diverging_seeds(diverge: float) -> None:
    r = simulate(2000, diverge=diverge, rng_seed=int(diverge * 1000))
    assert r.any_reading <= ALPHA + 2 * r.mc_error, r  # before this verdict: 33% at 1%, 82% at 5%


def test_aa_family_wise_rate_holds_without_pairing_correlation() -> None:
    r = simulate(400, rho=0.0, diverge=0.05, rng_seed=5)
    assert r.any_reading <= ALPHA + 2 * r.mc_error, r


def test_identical_seeds_give_no_verdict() -> None:
    same = np.full(SEEDS, 5.0)
    ids = np.arange(SEEDS)
    tests = [two_arm_test(same, same + 1e-9, seeds_a=ids, seeds_b=ids) for _ in range(CELLS)]
    assert all(math.isnan(t.p) and "identical seeds" in t.note for t in tests)
    assert {r.reading for r in correct_family(tests, alpha=ALPHA)} == {"no verdict"}


@pytest.mark.slow
def test_power_at_three_seed_sds_with_paired_seeds_is_measured() -> None:
    """Measured, not a target here (the sequential confirmation is what reaches 80%)."""
    paired = simulate(1000, shift=3.0, rho=0.8, rng_seed=11)
    unpaired = simulate(1000, shift=3.0, rho=0.0, rng_seed=12)
    assert paired.per_cell > unpaired.per_cell + 0.1, (paired, unpaired)


@dataclass(frozen=True)
class Staged:
    """What a simulation of the sequential confirmation measured."""

    any_reading: float
    """Share of benches with a better or worse reading in some cell."""
    mc_error: float
    """Monte Carlo standard error of ``any_reading``."""
    per_cell: float
    """Share of cells that read better or worse."""
    per_cell_error: float
    """Its Monte Carlo standard error (cells of one bench counted as independent)."""
    seeds: float
    """Mean confirmation seeds per arm a cell used (its stage's)."""
    stopped: tuple[float, ...]
    """Share of cells stopped at each stage."""


def simulate_staged(
    benches: int,
    design: SequentialDesign = OBRIEN_FLEMING,
    *,
    shift: float = 0.0,
    rho: float = 0.8,
    diverge: float = 0.0,
    rng_seed: int = 0,
) -> Staged:
    """``benches`` paper-protocol benches through the sequential confirmation (the arms' seed
    values drawn at once, as :func:`simulate` draws them, to the cap; a cell reads its first
    ``stages[k]`` only once stage k is reached)."""
    a, b = _seed_values(
        benches, design.cap, shift=shift, rho=rho, diverge=diverge, rng_seed=rng_seed
    )
    any_reading = read = seeds = 0
    stops = np.zeros(len(design.stages))
    for i in range(benches):
        out = sequential_cell(list(a[i]), list(b[i]), design, alpha=ALPHA)
        n = sum(c.reading in ("lower", "higher") for c in out)
        any_reading += n > 0
        read += n
        seeds += sum(c.seeds for c in out)
        for c in out:
            stops[c.stage] += 1
    cells = benches * CELLS
    p, q = any_reading / benches, read / cells
    return Staged(
        p,
        math.sqrt(max(p * (1 - p), 1e-4) / benches),
        q,
        math.sqrt(max(q * (1 - q), 1e-4) / cells),
        seeds / cells,
        tuple(float(x) for x in stops / cells),
    )


def test_staged_aa_family_wise_rate_holds_quick() -> None:
    r = simulate_staged(150, diverge=0.05, rng_seed=21)
    assert r.any_reading <= ALPHA + 2 * r.mc_error, r


@pytest.mark.slow
@pytest.mark.parametrize("diverge", [0.0, 0.01, 0.05])
def test_staged_aa_family_wise_rate_holds_with_diverging_seeds(diverge: float) -> None:
    r = simulate_staged(1500, diverge=diverge, rng_seed=100 + int(diverge * 1000))
    assert r.any_reading <= ALPHA + 2 * r.mc_error, r


def test_staged_power_at_three_seed_sds_reaches_80_percent_within_the_cap() -> None:
    """Issue 37's target (3 seeds alone: 71%): the stages read 80% of the cells, most at the
    second stage (5 seeds), few go to the cap."""
    r = simulate_staged(200, shift=3.0, rng_seed=22)
    assert r.per_cell - 2 * r.per_cell_error >= 0.80, r
    assert r.seeds < 5, r  # most cells stop before the cap (3 seeds: 12%, 5 seeds: 88%)


CASES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("A/A, no divergence", {"diverge": 0.0}),
    ("A/A, 1% of seeds diverge", {"diverge": 0.01}),
    ("A/A, 5% of seeds diverge", {"diverge": 0.05}),
    ("3 sd, paired (rho 0.8)", {"shift": 3.0}),
    ("3 sd, independent seeds (rho 0)", {"shift": 3.0, "rho": 0.0}),
)
"""The rows of both printed tables (the staged one adds Pocock-like spending)."""


def _table() -> str:
    rows = [
        "| case | benches | any better/worse (A/A FWER) | per cell | no verdict |",
        "|---|---|---|---|---|",
    ]
    for label, kw in CASES:
        r = simulate(4000, rng_seed=99, **kw)
        rows.append(
            f"| {label} | 4000 | {r.any_reading:.3f} ± {r.mc_error:.3f} | {r.per_cell:.3f} | "
            f"{r.no_verdict:.3f} |"
        )
    return "\n".join(rows)


BENCHES = 2000
"""Benches per row of the printed tables."""


def _staged_table() -> str:
    rows = [
        "| case (stages 3, 5, 8; alpha spent 3/16, 5/16, 8/16) | benches | any better/worse "
        "(A/A FWER) | per cell | mean seeds per arm | stopped at 3 / 5 / 8 |",
        "|---|---|---|---|---|---|",
    ]
    pocock = ("3 sd, paired, Pocock-like spending (1/3 each)", {"shift": 3.0, "design": POCOCK})
    for label, kw in (*CASES, pocock):
        r = simulate_staged(BENCHES, rng_seed=99, **kw)  # type: ignore[arg-type]
        stops = " / ".join(f"{x:.2f}" for x in r.stopped)
        rows.append(
            f"| {label} | {BENCHES} | {r.any_reading:.3f} ± {r.mc_error:.3f} | {r.per_cell:.3f} ± "
            f"{r.per_cell_error:.3f} | {r.seeds:.2f} | {stops} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    import sys

    print(_staged_table() if "--staged" in sys.argv else _table())
