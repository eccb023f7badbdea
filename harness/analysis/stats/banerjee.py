"""Banerjee's interval and test for a linear combination of means with unequal seed counts.

Welch's interval uses one t quantile at the Welch-Satterthwaite degrees of freedom, which are
estimated from the very seed variances they qualify. When the arms' seed counts differ, that
estimate is too optimistic: at 2 and 5 seeds Welch's 95 % interval covers 90 % (the smaller arm
twice as noisy) and at 2 and 10 seeds 90 % with equal noise (``docs/statistics.md``).

Banerjee (1960, "Approximate confidence interval for linear functions of means of k populations
when the population variances are not equal", Sankhya 22) gives each term its own quantile:
``half-width = sqrt(sum_i t_(df_i)^2 w_i)`` with ``w_i = c_i^2 s_i^2 / n_i``, the interval of a
linear combination sum c_i m_i of independent means. Its coverage is at least the nominal level
for every ratio of the true variances (conservative); where one term dominates it is that
term's own t interval. Written as one quantile on the usual standard error, it is
``sqrt(sum t_i^2 w_i / sum w_i)``, which :func:`quantile` returns, so Fieller's and the crossing's
inversions use it unchanged. Equal seed counts keep Welch's df (it covers there).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import optimize, special, stats

#: An array, or a number that broadcasts like one.
Values = np.ndarray | float

#: Smallest p-value :func:`p_value` resolves (a larger statistic reports this).
P_FLOOR = 1e-300


def quantile(weights: Sequence[Values], dfs: Sequence[Values], upper: Values) -> np.ndarray:
    """Banerjee's effective quantile ``sqrt(sum t_(1 - upper, df_i)^2 w_i / sum w_i)``.

    Args:
        weights: each term's variance contribution ``c_i^2 s_i^2 / n_i``.
        dfs: each term's degrees of freedom ``n_i - 1``.
        upper: the upper-tail probability of each term's t quantile (``(1 - confidence) / 2``
            for a two-sided interval).

    A term with zero weight does not count; with all weights zero the largest quantile of the
    terms is returned (a finite choice: the interval then has zero width anyway).
    """
    both = np.broadcast_arrays(*[np.asarray(x, float) for x in (*weights, *dfs)])
    w, d = np.stack(both[: len(weights)]), np.stack(both[len(weights) :])
    df = np.where(d > 0, d, np.nan)
    u = np.asarray(upper, float)
    with np.errstate(invalid="ignore"):
        if ((u > 0) & (u < 1)).all():  # stats.t.isf's own numbers (its _isf), without its checks
            t = np.asarray(-special.stdtrit(df, u), float)
        else:
            t = np.asarray(stats.t.isf(upper, df), float)
    total = w.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q = np.sqrt((t * t * w).sum(axis=0) / total)
    return np.asarray(np.where(total > 0, q, t.max(axis=0)), float)


def p_value(
    statistic: float, weights: Sequence[float], dfs: Sequence[float], alternative: str
) -> float:
    """The p-value of Banerjee's test of a zero linear combination: the level at which its
    interval's bound reaches zero.

    Args:
        statistic: estimate / standard error (the Welch t statistic).
        weights: as for :func:`quantile`.
        dfs: as for :func:`quantile`.
        alternative: ``two-sided``, ``less`` (the combination is negative) or ``greater``.
    """
    t = abs(float(statistic))
    if not np.isfinite(t):
        return float("nan")

    def excess(log_p: float) -> float:
        return float(quantile(weights, dfs, np.exp(log_p))) - t

    if t == 0:
        one = 0.5
    elif excess(np.log(P_FLOOR)) <= 0:
        one = P_FLOOR
    else:
        one = float(np.exp(optimize.brentq(excess, np.log(P_FLOOR), np.log(0.5), xtol=1e-12)))
    if alternative == "two-sided":
        return min(1.0, 2.0 * one)
    toward = statistic < 0 if alternative == "less" else statistic > 0
    return one if toward else 1.0 - one
