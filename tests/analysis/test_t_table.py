"""The t quantiles a tuned table reads from a table are scipy's, to the last bit, and
``analyze best`` imports no scipy (issue 41: its import was a second of CPU, more than the rest of
the command over 100,000 runs)."""

from __future__ import annotations

import numpy as np

from harness.analysis import stats
from harness.analysis.stats.defaults import CONFIDENCE


def test_the_table_holds_scipys_quantiles_bit_for_bit() -> None:
    df = np.arange(1, len(stats.T_QUANTILES) + 1, dtype=float)
    assert np.array_equal(stats.tabled_t_quantile(CONFIDENCE, df), stats.t_quantile(CONFIDENCE, df))


def test_no_degrees_of_freedom_is_nan_and_what_the_table_lacks_is_computed() -> None:
    df = np.array([0.0, -1.0, np.nan, 4.0])
    got = stats.tabled_t_quantile(CONFIDENCE, df)
    assert np.isnan(got[:3]).all() and got[3] == stats.T_QUANTILES[3]
    for confidence, beyond in ((CONFIDENCE, [2.5, 4.0]), (CONFIDENCE, [1000.0]), (0.9, [4.0])):
        want = stats.t_quantile(confidence, np.array(beyond))
        assert np.array_equal(stats.tabled_t_quantile(confidence, np.array(beyond)), want)


def test_the_quantiles_and_p_values_are_scipys_t_bit_for_bit() -> None:
    """The statistics call scipy.special's t functions directly (scipy.stats.t's checks cost
    more than the number in a per-cell loop); the numbers stay stats.t's, edge cases too."""
    from scipy import stats as sp

    from harness.analysis.stats import banerjee
    from harness.analysis.stats.intervals import satterthwaite, welch_p_value

    rng = np.random.default_rng(0)
    df = np.concatenate([rng.uniform(0.05, 60.0, 200), [np.nan, 0.0, -1.0, np.inf, 1.0, 1e9]])
    for confidence in (0.5, CONFIDENCE, 0.999):
        want = sp.t.ppf(1.0 - (1.0 - confidence) / 2.0, np.where(df > 0, df, np.nan))
        assert np.array_equal(stats.t_quantile(confidence, df), want, equal_nan=True)
    d = rng.integers(1, 6, (2, 50)).astype(float)
    w = rng.uniform(0.0, 1.0, (2, 50))
    t = sp.t.isf(0.025, d)
    want = np.sqrt((t * t * w).sum(axis=0) / w.sum(axis=0))
    assert np.array_equal(banerjee.quantile(list(w), list(d), 0.025), want)
    for est, df1 in ((0.3, 2.0), (-4.0, 3.5), (np.inf, 2.0), (-np.inf, 2.0), (np.nan, 2.0)):
        weights, dfs = [0.1, 0.3], [df1, df1]
        t1 = est / float(np.sqrt(np.sum(weights)))
        df_w = float(satterthwaite(weights, dfs))
        want_p = {
            "two-sided": 2 * sp.t.sf(abs(t1), df_w),
            "less": sp.t.cdf(t1, df_w),
            "greater": sp.t.sf(t1, df_w),
        }
        for alt, wp in want_p.items():
            assert np.array_equal(welch_p_value(est, weights, dfs, alt), wp, equal_nan=True)
