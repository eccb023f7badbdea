"""``analyze power`` against an independent computation of the noncentral t and hand formulas."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

from harness.analysis.rows.preparation import VALUE
from harness.analysis.rows.selectors import ARM
from harness.analysis.stats.power import detectable, power, power_table, seeds_needed


def _power_by_integration(delta, se, df, crit, two_sided=False):
    """P((Z + delta/se) / sqrt(V/df) > crit) [+ P(... < -crit)], V ~ chi2(df): by quadrature."""
    ncp = delta / se

    def upper(v):
        return stats.norm.sf(crit * math.sqrt(v / df) - ncp) * stats.chi2.pdf(v, df)

    def lower(v):
        return stats.norm.cdf(-crit * math.sqrt(v / df) - ncp) * stats.chi2.pdf(v, df)

    p = integrate.quad(upper, 0, np.inf, limit=200)[0]
    return p + (integrate.quad(lower, 0, np.inf, limit=200)[0] if two_sided else 0.0)


def test_welch_power_matches_integration_with_satterthwaite_df():
    """Above 30 seeds per arm: the noncentral t with the Welch-Satterthwaite df."""
    var_a, n_a, var_b, n_b, delta = 0.04, 31, 0.09, 40, 0.05
    se = math.sqrt(var_a / n_a + var_b / n_b)
    df = se**4 / ((var_a / n_a) ** 2 / (n_a - 1) + (var_b / n_b) ** 2 / (n_b - 1))
    got = float(power(delta, var_a, n_a, var_b, n_b, alpha=0.05, two_sided=False))
    assert got == pytest.approx(_power_by_integration(delta, se, df, stats.t.ppf(0.95, df)), 1e-6)
    got2 = float(power(delta, var_a, n_a, var_b, n_b, alpha=0.05, two_sided=True))
    crit2 = stats.t.ppf(0.975, df)
    assert got2 == pytest.approx(_power_by_integration(delta, se, df, crit2, True), 1e-6)
    assert float(power(0.0, var_a, n_a, var_b, n_b, alpha=0.05, two_sided=False)) == (
        pytest.approx(0.05)
    )  # no difference: rejects at the level


def test_welch_power_at_few_seeds_is_the_tests_rejection_rate():
    """At 2-5 seeds the noncentral t (se and df taken as known) overstated the power: 0.46 at
    n = 3 where Welch's test rejects 37 % of the time. Independent: scipy's Welch test on
    simulated seeds; with unequal seed counts the test the harness runs, Banerjee's (each
    arm's own t quantile)."""
    rng = np.random.default_rng(0)
    for n_a, n_b, sd_a, sd_b, delta in (
        (3, 3, 1.0, 1.0, 2.0),
        (2, 5, 2.0, 1.0, 2.0),
        (3, 4, 0.2, 0.3, 0.3),
    ):
        a = sd_a * rng.standard_normal((200_000, n_a))
        b = delta + sd_b * rng.standard_normal((200_000, n_b))
        for two_sided, alt in ((True, "two-sided"), (False, "greater")):
            rate = stats.ttest_ind(b, a, axis=1, equal_var=False, alternative=alt).pvalue < 0.05
            if n_a != n_b:
                level = 0.975 if two_sided else 0.95
                w = [a.var(axis=1, ddof=1) / n_a, b.var(axis=1, ddof=1) / n_b]
                t = [stats.t.ppf(level, n - 1) for n in (n_a, n_b)]
                crit = np.sqrt(t[0] ** 2 * w[0] + t[1] ** 2 * w[1])
                d = b.mean(axis=1) - a.mean(axis=1)
                rate = (np.abs(d) > crit) if two_sided else (d > crit)
            got = float(power(delta, sd_a**2, n_a, sd_b**2, n_b, alpha=0.05, two_sided=two_sided))
            assert got == pytest.approx(rate.mean(), abs=0.006)
    assert float(power(2.0, 1.0, 3, 1.0, 3, alpha=0.05, two_sided=True)) < 0.40


def test_paper_power_uses_app_f_se_and_s_minus_1_df():
    var_a, var_b, s, delta = 0.0001, 0.0001, 3, 0.04
    se = math.sqrt(var_a + var_b) / math.sqrt(s)
    got = float(power(delta, var_a, s, var_b, s, alpha=0.05, two_sided=False, test="paper"))
    assert got == pytest.approx(_power_by_integration(delta, se, 2, 2.919986), 1e-5)


def test_seeds_needed_and_detectable_are_consistent_and_near_the_normal_formula():
    sd, delta = 1.0, 0.5
    n = seeds_needed(delta, sd**2, sd**2, alpha=0.05, two_sided=True, target=0.8)
    normal = 2 * (stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) ** 2 * sd**2 / delta**2  # 62.8
    assert normal <= n <= normal + 2  # t needs a little more than the normal approximation
    p = lambda k: float(power(delta, 1.0, k, 1.0, k, alpha=0.05, two_sided=True))  # noqa: E731
    assert p(n) >= 0.8 > p(n - 1)
    d = detectable(1.0, n, 1.0, n, alpha=0.05, two_sided=True, target=0.8)
    assert d <= delta and float(power(d, 1.0, n, 1.0, n, alpha=0.05, two_sided=True)) == (
        pytest.approx(0.8, abs=1e-8)
    )


def test_power_table_per_cell():
    rows = [
        {ARM: arm, "bs": bs, "seed": s, VALUE: base + 0.1 * (s - 1)}
        for bs in (8, 16)
        for arm, base in (("a", 3.0), ("b", 2.9 if bs == 8 else 3.05))
        for s in range(3)
    ]
    out = power_table(pd.DataFrame(rows), ["bs"], "a", "b", alternative="less").set_index("bs")
    assert out.loc[8, "diff"] == pytest.approx(-0.1) and out.loc[8, "difference"] == (
        pytest.approx(0.1)
    )
    assert out.loc[8, "std_a"] == pytest.approx(0.1) and out.loc[8, "n_a"] == 3
    expected = float(power(0.1, 0.01, 3, 0.01, 3, alpha=0.05, two_sided=False))
    assert out.loc[8, "power"] == pytest.approx(expected)
    assert out.loc[16, "note"] == "the observed diff points against H1"
    assert out.loc[8, "seeds_needed"] == seeds_needed(
        0.1, 0.01, 0.01, alpha=0.05, two_sided=False, target=0.8
    )


def test_two_sided_power_stays_finite_where_scipys_lower_tail_is_nan():
    """The Coupled Adam study's lr 1e-3 loss cell (stds 0.042 and 0.199, 3 seeds each): Welch df
    about 2.2; scipy's nct.cdf(-crit, 2.2, 10) is NaN, which made ``detectable`` crash."""
    var_a, var_b, n = 0.04236**2, 0.199**2, 3
    se = math.sqrt(var_a / n + var_b / n)
    p = power(10 * se, var_a, n, var_b, n, alpha=0.05, two_sided=True)
    assert np.isfinite(p) and 0.99 < float(p) <= 1.0
    d = detectable(var_a, n, var_b, n, alpha=0.05, two_sided=True, target=0.8)
    assert float(power(d, var_a, n, var_b, n, alpha=0.05, two_sided=True)) == (
        pytest.approx(0.8, abs=1e-8)
    )


@pytest.mark.parametrize(
    ("alternative", "words"),
    [("two-sided", "H1: b differs from a (two-sided)"), ("less", "H1: b less than a")],
)
def test_the_hypothesis_note_reads_as_a_sentence(alternative, words):
    """``compare`` and ``power`` state H1 with this; "b two-sided than a" is not a sentence."""
    from harness.analysis.questions.query import hypothesis

    assert hypothesis("a", "b", alternative) == words


def test_seeds_needed_comes_with_the_range_its_estimated_variances_allow():
    """From 3 seeds a variance is known to within 0.33x..20x (90 %, chi-square 2 df): the
    seeds needed were printed as one number."""
    from harness.analysis.stats.power import variance_range

    lo, hi = variance_range(1.0, 3)
    assert (lo, hi) == pytest.approx((2 / stats.chi2.ppf(0.95, 2), 2 / stats.chi2.ppf(0.05, 2)))
    seeds = pd.DataFrame(
        [{ARM: "a", VALUE: v} for v in (7.41, 7.45, 7.49)]
        + [{ARM: "b", VALUE: v} for v in (6.66, 6.85, 7.06)]
    )
    row = power_table(seeds, [], "a", "b", alternative="two-sided", difference=0.02).iloc[0]
    assert row["seeds_needed_low"] < row["seeds_needed"] < row["seeds_needed_high"]
    assert row["seeds_needed_high"] / row["seeds_needed_low"] > 20
