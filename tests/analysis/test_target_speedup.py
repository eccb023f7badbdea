"""The speed-up to a target (:mod:`harness.analysis.stats.target_speedup`) against its claims,
by seeded simulation: the ratio of medians, censored runs kept, and the interval's coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.analysis.stats.target_speedup import mean_rule, speedup

EVERY = 125.0
TRUE_A, TRUE_B = 3250.0, 2690.0  # the speed-run's 20.8 %


def _coverage(na: int, nb: int, sigma: float, every: float, sims: int) -> float:
    """Share of simulated experiments whose interval covers the true ratio of medians: each
    seed's crossing lognormal around its arm's median, read at the next evaluation."""
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(sims):
        ta = np.ceil(TRUE_A * np.exp(rng.normal(0, sigma, na)) / every) * every
        tb = np.ceil(TRUE_B * np.exp(rng.normal(0, sigma, nb)) / every) * every
        s = speedup(ta, tb, ta - every, tb - every, n_boot=1000, seed=int(rng.integers(2**31)))
        hits += s.low <= TRUE_A / TRUE_B <= s.high
    return hits / sims


# Measured (400 experiments each, 95 % intervals): eval every 125 steps: 4 vs 8 seeds 1.00,
# 10 vs 10 1.00 (the evaluation spacing dominates: conservative), 3 vs 3 at sd 10 % 0.945,
# 2 vs 2 0.92; a curve read every step, sd 5 %: 10 vs 10 0.95, 4 vs 8 0.95, 5 vs 5 0.97.
@pytest.mark.parametrize(
    ("na", "nb", "sigma", "every"),
    [(4, 8, 0.03, EVERY), (10, 10, 0.1, EVERY), (10, 10, 0.05, 1.0), (4, 8, 0.05, 1.0)],
)
def test_interval_covers_the_true_ratio_at_its_level(na, nb, sigma, every):
    sims = 300
    cover = _coverage(na, nb, sigma, every, sims)
    mc = math.sqrt(0.95 * 0.05 / sims)  # Monte Carlo standard error at the nominal level
    assert cover >= 0.95 - 3 * mc, cover


def test_point_estimate_is_the_ratio_of_medians_and_censored_runs_count_as_slowest():
    a = np.array([3000.0, 3250.0, 3500.0, math.inf])  # one run never reached: +inf, kept
    b = np.array([2625.0, 2750.0, 2875.0])
    s = speedup(a, b, a - EVERY, b - EVERY)
    assert s.ratio == pytest.approx(np.median([3000, 3250, 3500, math.inf]) / 2750)
    assert s.ratio == pytest.approx(((3250 + 3500) / 2) / 2750)
    never = speedup(np.full(3, math.inf), b, np.full(3, 4000.0), b - EVERY)
    assert math.isinf(never.ratio) and math.isinf(never.high) and never.low > 1


def test_one_seed_gives_no_interval_and_identical_seeds_no_zero_width_one():
    one = speedup(np.array([3000.0]), np.array([2500.0, 2625.0]), np.array([2875.0]), [0, 0])
    assert one.ratio == pytest.approx(3000 / 2562.5) and math.isnan(one.low)
    same = speedup(np.full(4, 3000.0), np.full(4, 2500.0), np.full(4, 2875.0), np.full(4, 2375.0))
    assert same.low < 3000 / 2500 < same.high  # each reading anywhere between its evaluations


def test_mean_rule_is_the_speedruns_margin_at_the_latest_common_step():
    import pandas as pd

    pts = pd.DataFrame(
        {
            "run_id": ["x", "x", "y", "y", "y"],
            "step": [100, 200, 100, 200, 300],
            "val_loss": [3.30, 3.275, 3.31, 3.27, 3.2],
        }
    )
    m = mean_rule(pts, "val_loss", 3.28)
    assert m.step == 200 and m.n == 2 and m.mean == pytest.approx(3.2725)
    assert m.margin == pytest.approx(0.0075 * math.sqrt(2)) and m.passes
    assert not mean_rule(pts, "val_loss", 3.28, threshold=0.02).passes
