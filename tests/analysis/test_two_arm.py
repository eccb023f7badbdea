"""The one two-arm comparison (:mod:`harness.analysis.stats.two_arm`): paired by seed where the
seeds match, no verdict without spread, diverged seeds by Fisher's exact test, and each
interval at the level of its reading, so that the two never disagree (seeded simulation)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.analysis.stats import (
    correct_family,
    holm,
    reading_levels,
    two_arm_test,
    two_arms,
)


@pytest.mark.parametrize("correction", ["holm", "none", "bh"])
def test_a_reading_and_its_level_never_disagree(correction: str) -> None:
    from harness.analysis.stats import CORRECTIONS

    rng = np.random.default_rng(0)
    for _ in range(2000):
        m = int(rng.integers(1, 9))
        p = rng.uniform(0, 1, m) ** rng.uniform(1, 6)  # many small p-values
        adj = CORRECTIONS[correction](p)
        gamma = reading_levels(p, adj, 0.05, correction)
        assert np.array_equal(p < gamma, adj < 0.05), (p, adj, gamma)
    generic = reading_levels(np.array([0.01, 0.02]), holm(np.array([0.01, 0.02])), 0.05, None)
    assert np.array_equal(np.array([0.01, 0.02]) < generic, [True, True])


def test_intervals_exclude_zero_exactly_where_holm_reads_a_difference() -> None:
    """6 cells of 3 vs 3 seeds, half with a true difference: the interval at the reading's
    level excludes 0 iff the Holm-corrected reading is lower or higher, in every family."""
    rng = np.random.default_rng(1)
    disagree = 0
    for _ in range(300):
        tests = []
        for shift in (0, 0, 0, 2, 3, 4):
            a, b = rng.normal(0, 1, 3), rng.normal(shift, 1, 3)
            tests.append(two_arm_test(a, b))
        for r in correct_family(tests, alpha=0.05):
            excludes = not r.ci_low <= 0 <= r.ci_high
            disagree += excludes != (r.reading in ("lower", "higher"))
    assert disagree == 0


def test_the_same_seeds_are_paired_and_paired_finds_what_welch_cannot() -> None:
    rng = np.random.default_rng(2)
    shared = rng.normal(0, 1, 3)  # each seed moves both arms alike
    a = 5 + shared + rng.normal(0, 0.02, 3)
    b = 5 - 0.2 + shared + rng.normal(0, 0.02, 3)
    paired = two_arms(a, b, seeds_a=[3, 1, 2], seeds_b=[3, 1, 2])
    assert paired.method == "paired by seed" and paired.reading == "lower"
    assert paired.ci_high < 0
    welch = two_arms(a, b)  # no seeds: unpaired
    assert welch.method == "welch" and welch.reading == "no evidence"
    other = two_arms(a, b, seeds_a=[1, 2, 3], seeds_b=[4, 5, 6])  # other seeds: not paired
    assert other.method == "welch"
    shuffled = two_arms(a, b[[1, 2, 0]], seeds_a=[1, 2, 3], seeds_b=[2, 3, 1])  # by seed id
    assert shuffled.difference == pytest.approx(paired.difference)
    assert shuffled.p == pytest.approx(paired.p)
    assert two_arms(a, b[:2]).method == "banerjee"


def test_zero_spread_is_no_verdict() -> None:
    same = two_arms([5.0, 5.0, 5.0], [5.0 + 1e-9] * 3, seeds_a=[1, 2, 3], seeds_b=[1, 2, 3])
    assert same.reading == "no verdict" and np.isnan(same.p) and np.isnan(same.ci_low)
    assert "identical seeds" in same.note
    shifted = two_arms([5.0, 5.1, 5.2], [5.5, 5.6, 5.7], seeds_a=[1, 2, 3], seeds_b=[1, 2, 3])
    assert shifted.reading == "no verdict"  # per-seed differences that do not vary
    assert two_arms([5.0], [4.0, 4.1]).reading == "no verdict"


def test_diverged_seeds_are_tested_by_fishers_exact_test() -> None:
    one = two_arms([5.0, 5.1, 5.2], [4.0, np.inf, 4.1])
    assert one.diverged and one.reading == "no evidence" and one.p == pytest.approx(1.0)
    assert np.isnan(one.ci_low)
    many = two_arms(np.full(8, 5.0) + np.arange(8) * 0.01, np.full(8, np.inf))
    assert many.reading == "higher" and many.p < 0.001  # b diverges more
