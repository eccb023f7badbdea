"""Every interval the analysis reports covers the truth at its nominal level at 3 seeds.

The simulation (:mod:`tests.coverage_simulation`) runs the analysis's own interval functions on
experiments with known true values, normal and heavy-tailed seed noise. The former percentile
bootstrap is checked to fail the same bar, so the bar is one a wrong method does not pass.
Misspecified scenarios (an asymmetric lr curve, a drifting power law, a small gap) count an
interval flagged by the harness (``fit_check``, the gap table's small-gap note) as not a miss.
"""

from __future__ import annotations

import pandas as pd
import pytest

from tests.coverage_simulation import (
    ASYMMETRIC,
    EXTRAPOLATED,
    INTERVALS,
    POOLED,
    SMALL_GAP,
    SPEEDUP_DRIFT,
    UNEQUAL,
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
    """The speed-up the bench reads is extrapolated (the candidate beats the baseline at the
    largest budget): under the drifting curve its interval covers far less than 95 % with 3
    budgets (why the bench reads it unchecked), and with 4 budgets, flags counted, still less
    (docs/statistics.md, "Measured but not fixed")."""
    t = coverage(EXTRAPOLATED, seed_counts=(3,), reps=150)
    pct = t.groupby("interval")["coverage_pct"].max()
    assert pct[EXTRAPOLATED[1]] < 60, t  # 3 budgets: about 30 %
    assert pct[EXTRAPOLATED[1]] < pct[EXTRAPOLATED[0]] < FLOOR_PCT, t  # 4 budgets: 68-88 %
