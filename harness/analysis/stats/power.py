"""Power: how many seeds a comparison needs, and what the present seeds can detect.

From the seed standard deviations s_a, s_b measured in each cell (the tuned configurations' seeds),
a t test of b against a at level alpha detects a true difference delta (in the direction of H1)
with probability

    power = P(T' > t_crit)                       (one-sided)
    power = P(T' > t_crit) + P(T' < -t_crit)     (two-sided, t_crit at alpha / 2)

where T' is noncentral t with df degrees of freedom and noncentrality delta / se. ``welch``:
se = sqrt(s_a^2 / n_a + s_b^2 / n_b), df Welch-Satterthwaite, and up to 30 seeds per arm the
test's actual rejection rate instead (:mod:`harness.analysis.stats.welch_rejection`: the
noncentral t treats the estimated se and df as known and overstates the power at 2-3 seeds);
``paper``
(App. F of the Coupled Adam paper): se = sqrt(s_a^2 + s_b^2) / sqrt(S), df = S - 1.
``seeds_needed`` is the smallest number of seeds per arm (equal in both) whose power reaches
``--power``; ``detectable`` is the smallest delta the present seeds detect with that power. The
variances are themselves estimated from few seeds, so these numbers are estimates too (the note
says from how many).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

import numpy as np
import pandas as pd
from scipy import optimize, stats

from harness.analysis.stats.cells import iter_cells
from harness.analysis.stats.defaults import POWER_TESTS, Alternative, PowerTest
from harness.analysis.stats.frame import ARM, VALUE
from harness.analysis.stats.intervals import satterthwaite
from harness.analysis.stats.welch_rejection import EXACT_UP_TO, welch_power

#: Most seeds per arm ``seeds_needed`` looks at; more is reported as ``> MAX_SEEDS``.
MAX_SEEDS = 1000
#: Tests with a power formula here.
TESTS = POWER_TESTS
#: Output columns after the ``by`` columns.
COLUMNS = (
    "n_a",
    "std_a",
    "n_b",
    "std_b",
    "diff",
    "difference",
    "power",
    "seeds_needed",
    "seeds_needed_low",
    "seeds_needed_high",
    "detectable",
    "note",
)
#: Two-sided level of the range given with ``seeds_needed`` (each variance's chi-square interval).
SEEDS_RANGE = 0.9


def _se_df(
    var_a: float | np.ndarray,
    n_a: float | np.ndarray,
    var_b: float | np.ndarray,
    n_b: float | np.ndarray,
    test: PowerTest,
) -> tuple[np.ndarray, np.ndarray]:
    var_a, n_a, var_b, n_b = (np.asarray(v, float) for v in (var_a, n_a, var_b, n_b))
    if test == "paper":
        s = np.minimum(n_a, n_b)
        return np.sqrt((var_a + var_b) / s), s - 1.0
    w = [var_a / n_a, var_b / n_b]
    return np.sqrt(w[0] + w[1]), satterthwaite(w, [n_a - 1.0, n_b - 1.0])


def power(
    delta: float | np.ndarray,
    var_a: float | np.ndarray,
    n_a: float | np.ndarray,
    var_b: float | np.ndarray,
    n_b: float | np.ndarray,
    *,
    alpha: float,
    two_sided: bool,
    test: PowerTest = "welch",
) -> np.ndarray:
    """Probability that the test rejects when the true difference is ``delta`` (> 0: in the
    direction of H1). Arrays broadcast."""
    se, df = _se_df(var_a, n_a, var_b, n_b, test)
    ncp = np.asarray(delta, float) / se
    crit = stats.t.ppf(1 - (alpha / 2 if two_sided else alpha), df)
    out = stats.nct.sf(crit, df, ncp)
    # P(T' < -crit) written as P(T'(-ncp) > crit): the same value, but scipy's lower tail is NaN
    # for some non-integer df and large ncp (df 2.2, ncp 10), where this one is finite
    out = np.asarray(out + stats.nct.sf(crit, df, -ncp) if two_sided else out, float)
    if test != "welch":
        return out
    # few seeds: Welch's actual rejection rate (random se and df), which the noncentral t overstates
    args = np.broadcast_arrays(*(np.asarray(v, float) for v in (delta, var_a, n_a, var_b, n_b)))
    small = np.maximum(args[2], args[4]) <= EXACT_UP_TO
    if small.any():
        out = np.array(np.broadcast_to(out, small.shape), float)
        out[small] = welch_power(*(v[small] for v in args), alpha=alpha, two_sided=two_sided)
    return out


def seeds_needed(
    delta: float,
    var_a: float,
    var_b: float,
    *,
    alpha: float,
    two_sided: bool,
    target: float,
    test: PowerTest = "welch",
) -> float:
    """The fewest seeds per arm (2..:data:`MAX_SEEDS`) whose power at ``delta`` reaches
    ``target``; inf beyond."""
    n = np.arange(2, MAX_SEEDS + 1, dtype=float)
    p = power(delta, var_a, n, var_b, n, alpha=alpha, two_sided=two_sided, test=test)
    hit = np.flatnonzero(p >= target)
    return float(n[hit[0]]) if hit.size else float("inf")


def detectable(
    var_a: float,
    n_a: float,
    var_b: float,
    n_b: float,
    *,
    alpha: float,
    two_sided: bool,
    target: float,
    test: PowerTest = "welch",
) -> float:
    """The smallest delta > 0 detected with probability ``target`` at these seed counts."""
    se, _ = _se_df(var_a, n_a, var_b, n_b, test)

    def gap(d: float) -> float:
        return (
            float(power(d, var_a, n_a, var_b, n_b, alpha=alpha, two_sided=two_sided, test=test))
            - target
        )

    hi = float(se)
    while gap(hi) < 0:
        hi *= 2
    return float(optimize.brentq(gap, 0.0, hi, xtol=1e-12 * hi, rtol=1e-10))


def variance_range(var: float, n: int, level: float = SEEDS_RANGE) -> tuple[float, float]:
    """The chi-square interval of a seed variance estimated from ``n`` seeds: the true
    variances consistent with it (``level`` two-sided). From 3 seeds (2 df) at 90 %: 0.33 to 20
    times the estimate, which is why ``seeds_needed`` comes with a range."""
    df = n - 1.0
    tail = (1 - level) / 2
    return df * var / stats.chi2.ppf(1 - tail, df), df * var / stats.chi2.ppf(tail, df)


def power_table(
    seeds: pd.DataFrame,
    by: Sequence[str],
    a: str,
    b: str,
    *,
    test: PowerTest = "welch",
    alternative: Alternative = "less",
    alpha: float = 0.05,
    target: float = 0.8,
    difference: float | None = None,
) -> pd.DataFrame:
    """One row per cell: the seeds and spreads of a and b, the observed diff (b - a), the
    difference planned for, the power now, the seeds needed and the detectable difference."""
    rows = []
    for key, cell in iter_cells(seeds, by):
        va = cell.loc[cell[ARM] == a, VALUE].to_numpy(float)
        vb = cell.loc[cell[ARM] == b, VALUE].to_numpy(float)
        rows.append(dict(key) | _cell(va, vb, test, alternative, alpha, target, difference))
    return pd.DataFrame(rows)[[*by, *COLUMNS]]


class _TestArgs(TypedDict):
    """The test's keywords of :func:`power`, :func:`seeds_needed` and :func:`detectable`."""

    alpha: float
    two_sided: bool
    test: PowerTest


def _cell(
    va: np.ndarray,
    vb: np.ndarray,
    test: PowerTest,
    alternative: Alternative,
    alpha: float,
    target: float,
    difference: float | None,
) -> dict[str, object]:
    row: dict[str, object] = dict.fromkeys(COLUMNS, np.nan)
    row |= {"n_a": va.size, "n_b": vb.size, "note": ""}
    if min(va.size, vb.size) < 2 or not np.isfinite([*va, *vb]).all():
        return row | {"note": "fewer than 2 finite seeds in an arm: no variance to plan from"}
    var_a, var_b = va.var(ddof=1), vb.var(ddof=1)
    diff = vb.mean() - va.mean()
    delta = abs(diff) if difference is None else abs(difference)
    kw: _TestArgs = {"alpha": alpha, "two_sided": alternative == "two-sided", "test": test}
    row |= {"std_a": np.sqrt(var_a), "std_b": np.sqrt(var_b), "diff": diff, "difference": delta}
    if var_a + var_b == 0:
        return row | {"note": "no seed variance: any difference is detected"}
    row["power"] = float(power(delta, var_a, va.size, var_b, vb.size, **kw))
    row["seeds_needed"] = seeds_needed(delta, var_a, var_b, target=target, **kw)
    (lo_a, hi_a), (lo_b, hi_b) = variance_range(var_a, va.size), variance_range(var_b, vb.size)
    row["seeds_needed_low"] = seeds_needed(delta, lo_a, lo_b, target=target, **kw)
    row["seeds_needed_high"] = seeds_needed(delta, hi_a, hi_b, target=target, **kw)
    row["detectable"] = detectable(var_a, va.size, var_b, vb.size, target=target, **kw)
    if alternative != "two-sided" and (diff < 0) != (alternative == "less") and diff != 0:
        row["note"] = "the observed diff points against H1"
    return row
