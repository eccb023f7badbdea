"""Every interval the analysis reports covers the truth at its nominal level at 3 seeds.

The simulation (:mod:`tests.coverage_simulation`) runs the analysis's own interval functions on
experiments with known true values, normal and heavy-tailed seed noise. The former percentile
bootstrap is checked to fail the same bar, so the bar is one a wrong method does not pass.
Misspecified scenarios (an asymmetric lr curve, a drifting power law, a small gap) count an
interval flagged by the harness (``fit_check``, the gap table's small-gap note) as not a miss.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.coverage_simulation import (
    ASYMMETRIC,
    EXTRAPOLATED,
    EXTRAPOLATED_D,
    EXTRAPOLATED_TRUTH,
    INTERVALS,
    POOLED,
    SMALL_GAP,
    SPEEDUP_DRIFT,
    UNEQUAL,
    _drift_curve,
    coverage,
)

pytestmark = pytest.mark.slow  # the simulation behind it runs thousands of experiments

#: Nominal 95 % intervals must cover (or be flagged) at least this often.
FLOOR_PCT = 93.0
REPORTED = tuple(
    name
    for name in INTERVALS
    if "former" not in name and "noted" not in name and name not in EXTRAPOLATED
)
"""The intervals held to the floor (the bench's extrapolated speed-up is measured, not fixed:
:func:`test_the_benchs_extrapolated_speedup_is_measured`)."""


@pytest.fixture(scope="module")
def table():
    closed = coverage(("mean", "difference", "gap closure"), reps=3000)
    # where Welch's df and bounded Fieller intervals under-covered: n = 2 and 3
    small = coverage((*UNEQUAL, *SMALL_GAP, *POOLED[:2]), seed_counts=(2, 3), reps=2000)
    cross = coverage(
        ("crossover", "critical batch", "critical batch (x4 grid)"), seed_counts=(3, 10), reps=1000
    )
    fits = [
        coverage(("speed-up ratio",), seed_counts=(3,), reps=600),
        coverage((SPEEDUP_DRIFT,), seed_counts=(3,), reps=200),
        coverage(("fitted optimum", "metric at optimum", *ASYMMETRIC), seed_counts=(3,), reps=300),
    ]
    return pd.concat([closed, cross]), pd.concat([small, *fits])


def test_every_interval_covers_95_percent_at_three_seeds(table):
    closed, slow = table
    checked = [*closed[closed["n"] == 3].itertuples(), *slow.itertuples()]
    assert {r.interval for r in checked} == set(REPORTED)
    low = [
        (r.interval, r.noise, r.n, r.coverage_pct) for r in checked if r.coverage_pct < FLOOR_PCT
    ]
    assert not low, f"coverage below {FLOOR_PCT}%: {low}"
    # and not absurdly wide either: at n = 10 the closed forms sit near 95 %
    at10 = closed[closed["n"] == 10]
    assert (at10["coverage_pct"] < 98.5).all(), at10


def test_the_former_percentile_bootstrap_fails_the_bar():
    former = coverage(("gap closure (former)",), seed_counts=(3,), reps=1500)
    assert (former["coverage_pct"] < FLOOR_PCT).all(), former


def test_the_benchs_extrapolated_speedup_is_measured() -> None:
    """A speed-up above 1 is extrapolated (the baseline would need more than its largest
    budget): under the drifting curve no interval tried covers at its level, with 3 or 4
    budgets, fit checks counted, the variance widened by the lack of fit or not: why the bench
    reads it unchecked (docs/statistics.md, the coverage table)."""
    d = np.geomspace(EXTRAPOLATED_D[-1], EXTRAPOLATED_TRUTH * EXTRAPOLATED_D[-1], 50)
    assert (np.diff(_drift_curve(d)) < 0).all()  # the truth is where the curve first gets there
    late = np.geomspace(8e9, 1.2e10, 50)  # the former scenario's target was past the minimum
    assert not (np.diff(_drift_curve(late)) < 0).all()
    t = coverage(EXTRAPOLATED, seed_counts=(5,), reps=150)
    pct = t.groupby("interval")["coverage_pct"].max()
    assert (pct < FLOOR_PCT).all(), t  # 4 budgets: 71-79 %; tried: 78-88 %; 3 budgets: 47-63 %
