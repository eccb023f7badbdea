"""Checks that a fitted curve is the right model, and a band that needs no model.

A fitted optimum (or speed-up) carries seed noise in its interval, not model error: if the true
curve is not the fitted family (an lr curve that is steeper on one side than the other), the
interval narrows around a biased value as seeds are added. Two checks catch that:

- :func:`lack_of_fit`: the classic lack-of-fit F test. The residuals of the least-squares fit
  of the means are compared with the seed noise pooled over the fitted points: under the model,
  ``F = (sum_j n_j r_j^2 / (k - p)) / s^2`` has the F(k - p, sum_j (n_j - 1)) distribution
  (normal seed noise with a common variance; exact for equal n_j).
- :func:`intervals_disjoint`: two fits of the same quantity over different fit windows (the
  default window and the three points around the best) whose intervals do not overlap disagree
  by more than seed noise allows, which is model error.

:func:`approximately_best` is the model-free answer (Marin's "approximately best" band): the
grid values whose mean is within the noise of the best one, by a one-sided Welch test at the
stated level.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

#: Level of the lack-of-fit F test: a p-value below it marks the fit as not the curve.
LACK_OF_FIT_ALPHA = 0.05
#: The ``fit_check`` value of a fit that passed every check.
OK = "ok"


@dataclass(frozen=True, slots=True)
class LackOfFit:
    """The lack-of-fit F test of one least-squares fit."""

    f: float
    """The F statistic (mean squared residual over pooled seed variance); NaN when untestable."""
    df_fit: int
    """Numerator degrees of freedom: fitted points minus parameters."""
    df_noise: float
    """Denominator degrees of freedom: seeds minus one, summed over the points."""
    p: float
    """Upper-tail p-value; NaN when the test cannot be made (no spare points or no seed noise)."""

    @property
    def rejected(self) -> bool:
        """Whether the residuals exceed seed noise at :data:`LACK_OF_FIT_ALPHA`."""
        return bool(self.p < LACK_OF_FIT_ALPHA)


def lack_of_fit(residuals: np.ndarray, std: np.ndarray, n: np.ndarray, n_params: int) -> LackOfFit:
    """Lack-of-fit F test of a fit of k point means with ``n_params`` parameters.

    Args:
        residuals: (k,) means minus the fitted values.
        std: (k,) seed standard deviations at each point (ddof 1).
        n: (k,) seeds at each point.
        n_params: parameters of the fitted model (3 for a quadratic).

    Returns:
        The test; p is NaN when k <= n_params, when a point has one seed, or when the pooled
        seed variance is zero (identical seeds: nothing to compare the residuals with).
    """
    r, s, n = (np.asarray(v, float) for v in (residuals, std, n))
    df_fit = r.size - n_params
    df_noise = float((n - 1).sum())
    if df_fit <= 0 or n.min() < 2 or not np.isfinite(s).all():
        return LackOfFit(f=np.nan, df_fit=max(df_fit, 0), df_noise=df_noise, p=np.nan)
    pooled = float(((n - 1) * s**2).sum() / df_noise)
    if pooled <= 0:
        return LackOfFit(f=np.nan, df_fit=df_fit, df_noise=df_noise, p=np.nan)
    f = float((n * r**2).sum() / df_fit / pooled)
    return LackOfFit(
        f=f, df_fit=df_fit, df_noise=df_noise, p=float(stats.f.sf(f, df_fit, df_noise))
    )


def intervals_disjoint(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two intervals (NaN-free) share no point."""
    return bool(a[1] < b[0] or b[1] < a[0])


@dataclass(frozen=True, slots=True)
class Band:
    """The grid values whose mean is not significantly worse than the best one."""

    low: float
    """Smallest such value."""
    high: float
    """Largest such value."""
    count: int
    """How many grid values are in the band (the best included)."""


def approximately_best(
    values: np.ndarray,
    means: np.ndarray,
    std: np.ndarray,
    n: np.ndarray,
    sign: float,
    confidence: float,
) -> Band:
    """The "approximately best" band: every value whose mean a one-sided Welch test at level
    1 - ``confidence`` cannot call worse than the best mean (``sign`` 1: lower is better).

    No model is fitted; the band answers "which lr values are as good as the best within the
    noise". Points with one seed (no variance) are in the band only when their mean equals the
    best; non-finite means are never in it.

    Args:
        values: (k,) the axis values.
        means: (k,) the point means.
        std: (k,) seed standard deviations (ddof 1).
        n: (k,) seeds per point.
        sign: 1 when lower is better, -1 when higher is.
        confidence: one-sided level of the test (0.95: alpha 0.05).
    """
    values, means, std, n = (np.asarray(v, float) for v in (values, means, std, n))
    finite = np.isfinite(means)
    score = np.where(finite, sign * means, np.inf)
    best = int(np.argmin(score))
    v = np.where(n > 1, std**2 / np.maximum(n, 1), np.nan)
    se2 = v + v[best]
    with np.errstate(divide="ignore", invalid="ignore"):
        df = se2**2 / (v**2 / (n - 1) + v[best] ** 2 / (n[best] - 1))
    gap = score - score[best]  # >= 0: how much worse than the best
    q = stats.t.ppf(confidence, np.where(np.isfinite(df) & (df > 0), df, 1.0))
    within = finite & ((gap <= 0) | (np.isfinite(se2) & (gap <= q * np.sqrt(se2))))
    within[best] = True
    chosen = values[within]
    return Band(low=float(chosen.min()), high=float(chosen.max()), count=int(within.sum()))
