"""Crossover: the x (e.g. batch size) at which arm b starts to beat arm a.

At each x both arms are tuned; d(x) is b's advantage (m_a - m_b when lower is better). The
crossover is the last change of sign of d along increasing x, placed by linear interpolation of
d in log2 x (x is a batch size or a budget, spaced by factors of 2). When b is better at the
largest x, b beats a *above* the crossover; otherwise b beats a *below* it. With no change of
sign in the range, there is no crossover, and the answer says which arm wins throughout.

The interval is a percentile bootstrap over seeds (each (arm, x) resampled independently), over
the resamples with a crossover in the same direction; ``p_boot`` is the fraction of resamples
that have one, a direct measure of how sure the crossover is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.analysis.bootstrap import CONFIDENCE, N_BOOT, interval, resampled_means
from harness.analysis.cells import iter_cells, with_keys
from harness.analysis.select import ARM
from harness.analysis.values import VALUE

#: Output columns after the ``by`` columns.
COLUMNS = (
    "crossover",
    "ci_low",
    "ci_high",
    "p_boot",
    "b_better",
    "x_range",
    "sign_changes",
    "note",
)


@dataclass(frozen=True, slots=True)
class Crossing:
    """Where d changes sign for the last time along x."""

    x: float
    """The crossover (NaN when there is none)."""
    b_better: str
    """``above`` or ``below`` the crossover; ``everywhere`` or ``nowhere`` without one."""
    sign_changes: int
    """How many times b's advantage changes sign along x (more than 1: not monotone)."""


def find_crossing(xs: np.ndarray, advantage: np.ndarray) -> Crossing:
    """The last sign change of ``advantage`` (b's advantage over a) along sorted ``xs``.

    Args:
        xs: increasing positive x values, shape (n,).
        advantage: b's advantage at each x (> 0: b better; 0 counts as not better), shape (n,).
            Infinite values (an arm diverged) are allowed; a crossing next to one is placed at
            the midpoint in log2 x.
    """
    better = advantage > 0
    changes = np.flatnonzero(better[1:] != better[:-1])
    if changes.size == 0:
        return Crossing(x=np.nan, b_better="everywhere" if better[0] else "nowhere", sign_changes=0)
    i = int(changes[-1])
    l0, l1 = np.log2(xs[i]), np.log2(xs[i + 1])
    d0, d1 = advantage[i], advantage[i + 1]
    t = d0 / (d0 - d1) if np.isfinite([d0, d1]).all() else 0.5
    return Crossing(
        x=float(2 ** (l0 + t * (l1 - l0))),
        b_better="above" if better[-1] else "below",
        sign_changes=int(changes.size),
    )


def advantage(m_a: np.ndarray, m_b: np.ndarray, goal: str) -> np.ndarray:
    """b's advantage over a: positive when b is better; inf - inf (both diverged) is 0."""
    with np.errstate(invalid="ignore"):
        d = (m_a - m_b) if goal == "min" else (m_b - m_a)
    return np.nan_to_num(d, nan=0.0, posinf=np.inf, neginf=-np.inf)


def crossover(
    seeds: pd.DataFrame,
    by: Sequence[str],
    x: str,
    a: str,
    b: str,
    goal: str,
    *,
    n_boot: int = N_BOOT,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> pd.DataFrame:
    """The crossover of b over a along ``x`` in each cell, with a bootstrap interval.

    Args:
        seeds: one row per seed of each tuned configuration: ``by``, ``x``, ``arm``, ``value``.
        by: cell columns.
        x: the column along which to look for the crossover (positive values).
        a: label of arm a.
        b: label of arm b.
        goal: ``min`` or ``max``.
        n_boot: bootstrap resamples.
        confidence: two-sided level of the interval.
        seed: random seed of the resampling.

    Returns:
        One row per cell: ``by`` then :data:`COLUMNS`. Only x values where both arms ran count.
    """
    rng = np.random.default_rng(seed)
    parts = []
    for key, cell in iter_cells(seeds, by):
        row = _cell(cell, x, a, b, goal, n_boot, confidence, rng)
        parts.append(with_keys(pd.DataFrame([row]), key))
    return pd.concat(parts, ignore_index=True)[[*by, *COLUMNS]]


def _cell(cell, x, a, b, goal, n_boot, conf, rng) -> dict[str, object]:
    arms = {(arm, xv): g[VALUE].to_numpy(float) for (arm, xv), g in cell.groupby([ARM, x])}
    xs = np.array(sorted({xv for (arm, xv) in arms if (a, xv) in arms and (b, xv) in arms}))
    if xs.size < 2:
        return dict.fromkeys(COLUMNS, np.nan) | {"b_better": "n/a: fewer than 2 shared x"}
    m = {arm: np.array([arms[(arm, xv)].mean() for xv in xs]) for arm in (a, b)}
    point = find_crossing(xs, advantage(m[a], m[b], goal))
    row = {
        "crossover": point.x,
        "b_better": point.b_better,
        "x_range": f"{xs[0]:g}..{xs[-1]:g}",
        "sign_changes": point.sign_changes,
        "note": "not monotone: the last crossing" if point.sign_changes > 1 else "",
    }
    if min(arms[(arm, xv)].size for arm in (a, b) for xv in xs) < 2:
        return row | {
            "ci_low": np.nan,
            "ci_high": np.nan,
            "p_boot": np.nan,
            "note": "n = 1 at some x: no interval",
        }
    return row | _boot(arms, xs, point, a, b, goal, n_boot, conf, rng)


def _boot(arms, xs, point: Crossing, a, b, goal, n_boot, conf, rng) -> dict[str, float]:
    boot = {
        arm: np.stack([resampled_means(arms[(arm, xv)], n_boot, rng) for xv in xs], axis=1)
        for arm in (a, b)
    }  # arm -> (n_boot, n_x)
    adv = advantage(boot[a], boot[b], goal)
    crossings = [find_crossing(xs, adv[k]) for k in range(n_boot)]
    if np.isnan(point.x):  # how often would the resamples find one?
        return {
            "ci_low": np.nan,
            "ci_high": np.nan,
            "p_boot": float(np.mean([not np.isnan(c.x) for c in crossings])),
        }
    same = np.array([c.x for c in crossings if c.b_better == point.b_better])
    lo, hi = interval(same, conf)
    return {"ci_low": lo, "ci_high": hi, "p_boot": same.size / n_boot}
