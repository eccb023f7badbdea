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
conservative). The spending (:data:`SPENDING`) gives the weights: ``obrien-fleming`` spends in
proportion to each stage's seeds (half of alpha at the last of 3, 5, 8), ``pocock`` evenly.
A cell that stops at stage k costs ``stages[k]`` seeds per arm.

:func:`sequential_family` is the procedure over comparisons whose stage tests are made as the
seeds arrive (``harness bench`` plans the next stage's seeds for the cells it leaves open);
:func:`sequential_cell` runs it on arrays of values (the simulations).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from harness.analysis.stats.defaults import DEFAULT_SPENDING as DEFAULT_SPENDING
from harness.analysis.stats.two_arm import (
    TwoArmReading,
    TwoArmResult,
    TwoArmTest,
    correct_family,
    two_arm_test,
)


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


def _by_seeds(stages: Sequence[int]) -> tuple[float, ...]:
    return tuple(n / sum(stages) for n in stages)


def _evenly(stages: Sequence[int]) -> tuple[float, ...]:
    return tuple(1 / len(stages) for _ in stages)


SPENDING: dict[str, Callable[[Sequence[int]], tuple[float, ...]]] = {
    "obrien-fleming": _by_seeds,
    "pocock": _evenly,
}
"""Spending name -> the share of alpha of each stage, from the stages' seed counts:
``obrien-fleming`` (O'Brien-Fleming-like) in proportion to each stage's seeds, so that most of
alpha is kept for the last stage; ``pocock`` (Pocock-like) the same share at every stage."""


def sequential_design(stages: Sequence[int], spending: str = DEFAULT_SPENDING) -> SequentialDesign:
    """The design of ``stages`` (cumulative seeds per arm) under the named ``spending``.

    Raises:
        KeyError: an unknown spending (the caller names the valid ones: :data:`SPENDING`).
        ValueError: stages that do not increase from >= 2.
    """
    return SequentialDesign(tuple(stages), SPENDING[spending](stages))


OBRIEN_FLEMING = sequential_design((3, 5, 8), "obrien-fleming")
"""3, 5 then 8 seeds, most of alpha kept for the last stage (3/16, 5/16, 8/16)."""
POCOCK = sequential_design((3, 5, 8), "pocock")
"""3, 5 then 8 seeds, alpha spread evenly over the stages."""


@dataclass(frozen=True, slots=True)
class StageResult:
    """Where one comparison of a sequential family stands."""

    stage: int
    """The stage it stopped at (0-based), or, when ``waiting``, the stage whose seeds it needs."""
    seeds: int
    """Seeds per arm its reading used (its cost so far)."""
    result: TwoArmResult
    """Its reading: ``p`` the own p of the stage it reports, ``p_adjusted`` Holm's over the
    stage-combined p-values, the interval at the level of the reading (1 - the Holm step's
    level x the stage's weight)."""
    waiting: bool = False
    """Inconclusive, and the next stage's seeds have not run yet: its reading is provisional
    (no evidence so far)."""


StageTest = Callable[[int, int], "TwoArmTest | None"]
"""(comparison, stage) -> its test on that stage's seeds, None when they have not all run."""


def sequential_family(
    comparisons: int, test: StageTest, design: SequentialDesign, *, alpha: float = 0.05
) -> list[StageResult]:
    """The sequential procedure (module docstring) over ``comparisons`` comparisons.

    Args:
        comparisons: how many there are.
        test: each one's test at a stage (:data:`StageTest`); every comparison has its stage 0
            test (one without a p-value, no test, reads no verdict and is not in the family).
        design: the stages and their alpha.
        alpha: the family-wise level over the comparisons and stages.
    """
    first = [test(c, 0) for c in range(comparisons)]
    done: dict[int, StageResult] = {}
    for c, t in enumerate(first):
        if t is None or math.isnan(t.p):
            missing = TwoArmTest(math.nan, math.nan, math.nan, 0, 0, "none", "no test")
            only = correct_family([t or missing], alpha=alpha, correction="none")[0]
            done[c] = StageResult(0, design.stages[0], only, waiting=t is None)
    latest = {c: t for c, t in enumerate(first) if t is not None and c not in done}
    family = list(latest)
    chosen = {c: 0 for c in family}  # the stage of each one's smallest p / weight
    tests = {(c, 0): t for c, t in latest.items()}
    w = design.weights
    last = len(design.stages) - 1
    for k, n in enumerate(design.stages):
        still = [c for c in family if c not in done]
        if not still:
            break
        got = {c: tests.get((c, k)) or test(c, k) for c in still}
        if any(t is None for t in got.values()):  # stage k's seeds have not all run
            judged = _judge(family, chosen, tests, w, alpha)
            for c in still:
                r = _restate(judged[c], latest[c], w[chosen[c]], w[k - 1])
                done[c] = StageResult(k, design.stages[k - 1], r, waiting=True)
            break
        for c, t in got.items():
            assert t is not None
            tests[(c, k)] = latest[c] = t
            old = tests[(c, chosen[c])]
            if not math.isnan(t.p) and t.p / w[k] < old.p / w[chosen[c]]:
                chosen[c] = k
        judged = _judge(family, chosen, tests, w, alpha)
        for c in still:
            r = judged[c]
            if r.reading in ("lower", "higher"):
                done[c] = StageResult(k, n, r)
            elif k == last:
                done[c] = StageResult(k, n, _restate(r, latest[c], w[chosen[c]], w[k]))
    return [done[c] for c in range(comparisons)]


def _judge(
    family: Sequence[int],
    chosen: dict[int, int],
    tests: dict[tuple[int, int], TwoArmTest],
    weights: Sequence[float],
    alpha: float,
) -> dict[int, TwoArmResult]:
    """Holm over the family's stage-combined p-values (each one's best stage, its weight)."""
    picked = [tests[(c, chosen[c])] for c in family]
    spent = [weights[chosen[c]] for c in family]
    out = correct_family(picked, alpha=alpha, correction="holm", spent=spent)
    return dict(zip(family, out, strict=True))


def _restate(r: TwoArmResult, t: TwoArmTest, w_read: float, w_now: float) -> TwoArmResult:
    """An unrejected reading ``r`` restated on the comparison's latest test ``t`` (its most
    seeds), the interval at 1 - the same Holm level x the latest stage's weight (it covers 0:
    no stage's p / weight fell below that level)."""
    if t.diverged or math.isnan(t.p) or math.isnan(r.confidence):
        return r
    gamma = (1.0 - r.confidence) / w_read
    conf = 1.0 - gamma * w_now
    lo, hi = t.interval(conf)
    return replace(
        r,
        difference=t.difference,
        ci_low=lo,
        ci_high=hi,
        confidence=conf,
        p=t.p,
        n_a=t.n_a,
        n_b=t.n_b,
        method=t.method,
        note=t.note,
        statistic=t.statistic,
    )


@dataclass(frozen=True, slots=True)
class SequentialCell:
    """Where one cell stopped and what it read."""

    stage: int
    """The stage it stopped at (0-based; the last stage when it never read a difference)."""
    seeds: int
    """Seeds per arm it used (its cost)."""
    p: float
    """The p-value of the stage it reports (NaN: no test)."""
    p_adjusted: float
    """Holm-corrected over the cells' stage-combined p-values."""
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
    """Run ``design`` over the cells (module docstring, :func:`sequential_family`).

    Args:
        a: per cell, arm a's values on seeds 1..cap, in seed order (a value is read only once
            its stage is reached: a stopped cell's later seeds are never used).
        b: the same for arm b, on the same seeds (paired by seed).
        design: the stages and their alpha.
        alpha: the family-wise level over the cells and stages.
    """

    def test(c: int, k: int) -> TwoArmTest:
        n = design.stages[k]
        ids = np.arange(n)
        return two_arm_test(a[c][:n], b[c][:n], seeds_a=ids, seeds_b=ids)

    out = sequential_family(len(a), test, design, alpha=alpha)
    return [
        SequentialCell(
            s.stage, s.seeds, s.result.p, s.result.p_adjusted, s.result.reading, s.result.difference
        )
        for s in out
    ]
