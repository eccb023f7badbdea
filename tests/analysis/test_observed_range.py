"""A fitted value outside the range of observed values is flagged in ``fit_check`` (issue 30,
item 5): ``analyze optimum`` reported a metric far better than any observed mean, an interval
below zero for a perplexity, and an optimum outside the searched lrs, each with ``fit_check``
``ok``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.analysis.stats.fit_check import OK
from harness.analysis.stats.optimum_fit import optimum_table

LR = np.array([1e-4, 3e-4, 1e-3, 3e-3, 1e-2])


def _row(means, std, n=3) -> pd.Series:
    table = pd.DataFrame({"lr": LR[: len(means)], "mean": means, "std": std, "n": n})
    return optimum_table(table, [], "lr", "min").iloc[0]


def test_an_optimum_outside_the_searched_values_is_flagged():
    """The means still fall at the largest lr: the fitted optimum lies beyond it."""
    u = np.log(LR)
    means = 3.0 + 0.05 * (u - np.log(3e-2)) ** 2  # minimum at 0.03, outside 1e-4..1e-2
    row = _row(means, 0.01)
    assert row["optimum"] > LR.max()
    assert row["fit_check"] != OK and "outside the searched lr" in row["fit_check"]


def test_a_metric_interval_below_zero_for_a_positive_metric_is_flagged():
    """Every observed mean is positive (a loss); the fit's interval at the optimum reaches
    below zero, a value the metric never takes."""
    row = _row(np.array([4.0, 0.9, 1.0, 3.8]), np.array([0.9, 0.9, 0.9, 0.9]), n=2)
    assert row["metric_ci_low"] < 0 < row["metric"]
    assert row["fit_check"] != OK and "below 0" in row["fit_check"]


def test_a_fit_inside_the_observed_range_stays_ok():
    u = np.log(LR)
    means = 3.0 + 0.05 * (u - np.log(1e-3)) ** 2
    rng = np.random.default_rng(0)
    row = _row(means + rng.normal(0, 0.002, LR.size), 0.01)
    assert row["fit_check"] == OK, row["fit_check"]


def test_a_speedup_extrapolated_beyond_bs_budgets_is_noted():
    """a's final value is below every budget b tried: b's budget comes from the fitted power
    law beyond its largest budget, and the note says so (a guard: main already noted it; it is
    no fit_check failure, which would take the bench's verdict away)."""
    from harness.analysis.stats.frame import ARM, VALUE
    from harness.analysis.stats.power_law import speedup

    rng = np.random.default_rng(0)
    rows = [
        {ARM: "b", "tokens": x, "seed": s, VALUE: 2.4 + 300 * x**-0.3 + rng.normal(0, 0.003)}
        for x in (0.5e9, 1e9, 2e9, 4e9)
        for s in range(3)
    ]
    rows += [{ARM: "a", "tokens": 4e9, "seed": s, VALUE: 2.45 + 0.003 * s} for s in range(3)]
    row = speedup(pd.DataFrame(rows), [], "tokens", "a", "b", "min").iloc[0]
    assert row["budget_b"] > 4e9
    assert "extrapolated outside b's budgets" in row["note"]
