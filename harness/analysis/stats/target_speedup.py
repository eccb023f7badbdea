"""The speed-up of arm b over arm a to a target: how many times the steps (tokens, seconds) a
needs b needs, from each arm's seeds, with runs that never reach the target kept.

The point estimate is the ratio of the arms' medians over seeds, ``median(a) / median(b)``
(> 1: b is faster; ``speedup - 1`` is the fraction more a needs, the speed-run's "20.8 %").
A run that never reached the target counts as +inf: the slowest, never dropped, so an arm whose
median is +inf has no finite ratio.

The interval handles that each reading is only known to lie between two logged points: a run
reached the target after its last point above it (``low``) and at or before its first point at
or below (``high``); never reached: ``low`` its last logged point, ``high`` +inf; already below
at its first point (left-censored): ``low`` 0. Seeds are resampled with replacement within each
arm (percentile bootstrap); each resample bounds the ratio by ``median(a.low) / median(b.high)``
and ``median(a.high) / median(b.low)``, and the interval takes the lower quantile of the first
and the upper of the second. Its coverage over seeds is measured by seeded simulation in the
test suite (``tests/analysis/test_target_speedup.py``). An arm with one seed gives no interval
(NaN), never a zero-width one.

The speed-run's acceptance rule (:func:`mean_rule`) is separate: the mean over an arm's n seeds
of the curve at a step all of them logged, accepted when ``(target - mean) * sqrt(n) >=
threshold`` (0.004 in the nanoGPT speed-run).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

#: The speed-run's margin: (target - mean) * sqrt(n) must reach it.
SPEEDRUN_THRESHOLD = 0.004


@dataclass(frozen=True, slots=True)
class Speedup:
    """b's speed-up over a to a target."""

    ratio: float
    """median(a) / median(b) (inf: b reaches it and a does not; NaN: neither)."""
    low: float
    """Interval's lower end (NaN: an arm with fewer than 2 seeds)."""
    high: float
    """Interval's upper end (may be +inf: a's resampled median never reaches the target)."""


def _medians(values: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The median of each resample (``idx``: resamples x n indices) of ``values``; +inf kept
    (the lower of the two middle values for an even n is averaged without nan from inf - inf)."""
    v = np.sort(values[idx], axis=1)
    n = v.shape[1]
    lo, hi = v[:, (n - 1) // 2], v[:, n // 2]
    with np.errstate(invalid="ignore"):
        mid = np.where(np.isinf(hi), hi, (lo + hi) / 2)
    return np.asarray(mid, dtype=float)


def _ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(a / b, dtype=float)


def speedup(
    a: np.ndarray,
    b: np.ndarray,
    a_low: np.ndarray,
    b_low: np.ndarray,
    *,
    a_high: np.ndarray | None = None,
    b_high: np.ndarray | None = None,
    confidence: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> Speedup:
    """b's speed-up over a (module docstring).

    Args:
        a: a's per-seed readings (steps, tokens or seconds to target; +inf when never).
        b: b's.
        a_low: the last logged point before each of a's readings (0 when left-censored;
            for a run that never reached it, its last logged point).
        b_low: b's.
        a_high: the first logged point at or below (default ``a``, +inf when never).
        b_high: b's.
        confidence: two-sided level.
        n_boot: resamples.
        seed: the resampling seed.
    """
    a, b = np.asarray(a, float), np.asarray(b, float)
    a_high = a if a_high is None else np.asarray(a_high, float)
    b_high = b if b_high is None else np.asarray(b_high, float)
    whole = (np.arange(a.size)[None, :], np.arange(b.size)[None, :])
    point = float(_ratio(_medians(a, whole[0]), _medians(b, whole[1]))[0])
    if a.size < 2 or b.size < 2:
        return Speedup(point, math.nan, math.nan)
    rng = np.random.default_rng(seed)
    ia = rng.integers(0, a.size, size=(n_boot, a.size))
    ib = rng.integers(0, b.size, size=(n_boot, b.size))
    lower = _ratio(_medians(np.asarray(a_low, float), ia), _medians(b_high, ib))
    upper = _ratio(_medians(a_high, ia), _medians(np.asarray(b_low, float), ib))
    tail = (1 - confidence) / 2
    lower = np.where(np.isnan(lower), 0.0, lower)  # inf / inf: no bound
    upper = np.where(np.isnan(upper), math.inf, upper)
    low = float(np.quantile(lower, tail, method="lower"))
    high = float(np.quantile(upper, 1 - tail, method="higher"))
    return Speedup(point, low, high)


@dataclass(frozen=True, slots=True)
class MeanRule:
    """The speed-run's acceptance rule on one arm."""

    step: float
    """The latest step every seed logged the curve at (NaN: no common step)."""
    mean: float
    """The mean over seeds of the curve there."""
    n: int
    """Seeds."""
    margin: float
    """(target - mean) * sqrt(n)."""
    passes: bool
    """margin >= the threshold."""


def mean_rule(
    curves: pd.DataFrame, column: str, target: float, threshold: float = SPEEDRUN_THRESHOLD
) -> MeanRule:
    """The mean over an arm's seeds at their latest common step (``curves``: the seeds'
    points, with ``run_id``, ``step`` and ``column``) against ``target`` (module docstring)."""
    pts = curves.dropna(subset=[column])
    n = int(curves["run_id"].nunique())
    steps = pts.groupby("step")["run_id"].nunique()
    common = steps[steps == n].index
    if not n or common.empty:
        return MeanRule(math.nan, math.nan, n, math.nan, False)
    step = float(common.max())
    mean = float(pts.loc[pts["step"] == step, column].mean())
    margin = (target - mean) * math.sqrt(n)
    return MeanRule(step, mean, n, margin, bool(margin >= threshold))
