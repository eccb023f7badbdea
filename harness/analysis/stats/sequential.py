"""Sequential confirmation seeds: add seeds in stages to the cells still inconclusive, with the
family-wise error held over the stages and the cells.

A design is a list of cumulative seed counts per arm (``3, 5, 8``) and the share of alpha each
stage may spend (``weights``, summing to 1). At stage k every cell still open is tested on its
first ``stages[k]`` seeds by the one two-arm comparison
(:func:`~harness.analysis.stats.two_arm.two_arm_test`: paired by seed where the seeds match)
and given the stage-combined p-value ``min_(j <= k) p_j / w_j`` (Bonferroni over the stages,
weighted: a valid p-value whatever the correlation between the stages); Holm corrects those over
the cells, the cells Holm rejects stop with their reading, the others get the next stage's seeds.
Holm is monotone and a cell's combined p only falls as stages are added, so every rejection made
at a stage is one Holm makes on the cells' combined p-values at the last stage: the
family-wise error is at most alpha over the stages (a conservative group-sequential boundary;
exact Lan-DeMets boundaries from the joint t distribution of the stages would be less
conservative). ``OBRIEN_FLEMING`` keeps most of alpha for the last stage, ``POCOCK`` spreads it.
A cell that stops at stage k costs ``stages[k]`` seeds per arm.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.analysis.stats.corrections import holm
from harness.analysis.stats.two_arm import TwoArmReading, two_arm_test


@dataclass(frozen=True, slots=True)
class SequentialDesign:
    """Stages of confirmation seeds and the alpha each may spend."""

    stages: tuple[int, ...]
    """Cumulative seeds per arm at each stage (increasing, the first >= 2)."""
    weights: tuple[float, ...]
    """Share of alpha spent at each stage (> 0, summing to 1)."""

    def __post_init__(self) -> None:
        if len(self.stages) != len(self.weights) or not self.stages:
            raise ValueError(f"stages {self.stages} and weights {self.weights}: one per stage")
        if self.stages[0] < 2 or any(b <= a for a, b in itertools.pairwise(self.stages)):
            raise ValueError(f"stages {self.stages}: increasing seed counts from >= 2")
        if min(self.weights) <= 0 or not math.isclose(sum(self.weights), 1.0):
            raise ValueError(f"weights {self.weights}: positive, summing to 1")

    @property
    def cap(self) -> int:
        """Most seeds per arm."""
        return self.stages[-1]


OBRIEN_FLEMING = SequentialDesign((3, 5, 8), (0.2, 0.3, 0.5))
"""Most of alpha kept for the last stage (O'Brien-Fleming-like spending)."""
POCOCK = SequentialDesign((3, 5, 8), (1 / 3, 1 / 3, 1 / 3))
"""Alpha spread evenly over the stages (Pocock-like spending)."""


@dataclass(frozen=True, slots=True)
class SequentialCell:
    """Where one cell stopped and what it read."""

    stage: int
    """The stage it stopped at (0-based; the last stage when it never read a difference)."""
    seeds: int
    """Seeds per arm it used (its cost)."""
    p: float
    """Its stage-combined p-value when it stopped (NaN: no test)."""
    p_adjusted: float
    """Holm-corrected over the cells at that stage."""
    reading: TwoArmReading
    """lower, higher, no evidence (at the cap), or no verdict (no test)."""
    difference: float
    """mean(b) - mean(a) on its seeds (for diverged seeds, the shares diverged)."""


def sequential_cell(
    a: Sequence[np.ndarray],
    b: Sequence[np.ndarray],
    design: SequentialDesign = OBRIEN_FLEMING,
    *,
    alpha: float = 0.05,
) -> list[SequentialCell]:
    """Run ``design`` over the cells (module docstring).

    Args:
        a: per cell, arm a's values on seeds 1..cap, in seed order (a value is read only once
            its stage is reached: a stopped cell's later seeds are never used).
        b: the same for arm b, on the same seeds (paired by seed).
        design: the stages and their alpha.
        alpha: the family-wise level over the cells and stages.
    """
    cells = len(a)
    best = np.full(cells, np.inf)  # stage-combined p of each cell so far
    done: dict[int, SequentialCell] = {}
    last = len(design.stages) - 1
    for k, (n, w) in enumerate(zip(design.stages, design.weights, strict=True)):
        open_cells = [c for c in range(cells) if c not in done]
        tests = {}
        for c in open_cells:
            ids = np.arange(n)
            t = two_arm_test(a[c][:n], b[c][:n], seeds_a=ids, seeds_b=ids)
            tests[c] = t
            if not math.isnan(t.p):
                best[c] = min(best[c], t.p / w)
        combined = np.where(np.isfinite(best), np.minimum(best, 1.0), np.nan)
        adjusted = holm(combined)
        for c in open_cells:
            t, pa = tests[c], float(adjusted[c])
            if pa < alpha:
                reading: TwoArmReading = "lower" if t.difference < 0 else "higher"
            elif k < last:
                continue
            else:
                reading = "no verdict" if math.isnan(combined[c]) else "no evidence"
            done[c] = SequentialCell(k, n, float(combined[c]), pa, reading, t.difference)
    return [done[c] for c in range(cells)]
