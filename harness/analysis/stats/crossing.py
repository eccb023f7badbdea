"""Crossover: the x (e.g. batch size) at which arm b starts to beat arm a.

At each x both arms are tuned; d(x) is b's advantage (m_a - m_b when lower is better). The
crossover is the last change of sign of d along increasing x, placed by linear interpolation of
d in log2 x (x is a batch size or a budget, spaced by factors of 2). When b is better at the
largest x, b beats a *above* the crossover; otherwise b beats a *below* it. With no change of
sign in the range, there is no crossover, and the answer says which arm wins throughout.

The interval inverts the t test (:func:`harness.analysis.stats.intervals.crossing_interval`): it
holds every x, along the same interpolation, where b's advantage is not significantly different from
zero (Welch-Satterthwaite df). It covers the true crossover at its nominal level at 3 seeds
(``docs/statistics.md``). When it reaches the first or last x, the data do not bound it on that
side and the note says so. With no crossover in the estimate the interval is still reported when
a crossing cannot be excluded. ``p_boot`` is the fraction of percentile-bootstrap resamples
(each (arm, x) resampled independently) that have a crossover in the same direction: a
description of the data, not a calibrated probability.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import pandas as pd

from harness.analysis.stats.bootstrap import resampled_means
from harness.analysis.stats.cells import iter_cells, with_keys
from harness.analysis.stats.defaults import CONFIDENCE, N_BOOT
from harness.analysis.stats.frame import ARM, VALUE
from harness.analysis.stats.intervals import crossing_interval, two_arm_coefs
from harness.metrics.catalogue import Goal

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


def advantage(m_a: np.ndarray, m_b: np.ndarray, goal: Goal) -> np.ndarray:
    """b's advantage over a: positive when b is better; inf - inf (both diverged) is 0."""
    with np.errstate(invalid="ignore"):
        d = (m_a - m_b) if goal == "min" else (m_b - m_a)
    advantage: np.ndarray = np.nan_to_num(d, nan=0.0, posinf=np.inf, neginf=-np.inf)
    return advantage


def crossover(
    seeds: pd.DataFrame,
    by: Sequence[str],
    x: str,
    a: str,
    b: str,
    goal: Goal,
    *,
    n_boot: int = N_BOOT,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> pd.DataFrame:
    """The crossover of b over a along ``x`` in each cell, with a t-inversion interval.

    Args:
        seeds: one row per seed of each tuned configuration: ``by``, ``x``, ``arm``, ``value``.
        by: cell columns.
        x: the column along which to look for the crossover (positive values).
        a: label of arm a.
        b: label of arm b.
        goal: ``min`` or ``max``.
        n_boot: bootstrap resamples (``p_boot`` only).
        confidence: two-sided level of the interval.
        seed: random seed of the resampling (``p_boot``).

    Returns:
        One row per cell: ``by`` then :data:`COLUMNS`. Only x values where both arms ran count.
    """
    rng = np.random.default_rng(seed)
    parts = []
    for key, cell in iter_cells(seeds, by):
        row = _cell(cell, x, a, b, goal, n_boot, confidence, rng)
        parts.append(with_keys(pd.DataFrame([row]), key))
    return pd.concat(parts, ignore_index=True)[[*by, *COLUMNS]]


Arms = dict[tuple[str, float], np.ndarray]
"""(arm label, x value) -> the seeds' values there."""


def _cell(
    cell: pd.DataFrame,
    x: str,
    a: str,
    b: str,
    goal: Goal,
    n_boot: int,
    conf: float,
    rng: np.random.Generator,
) -> dict[str, object]:
    arms: Arms = {  # pandas types a group's key Hashable
        cast(tuple[str, float], key): g[VALUE].to_numpy(float) for key, g in cell.groupby([ARM, x])
    }
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
    if not all(np.isfinite(arms[(arm, xv)]).all() for arm in (a, b) for xv in xs):
        note = "; ".join(n for n in (cast(str, row["note"]), "diverged seed(s): no interval") if n)
        return (
            row
            | {"ci_low": np.nan, "ci_high": np.nan, "note": note}
            | {"p_boot": _p_boot(arms, xs, point, a, b, goal, n_boot, rng)}
        )
    return (
        row
        | _interval(arms, xs, point, a, b, goal, conf, cast(str, row["note"]))
        | {"p_boot": _p_boot(arms, xs, point, a, b, goal, n_boot, rng)}
    )


def _interval(
    arms: Arms,
    xs: np.ndarray,
    point: Crossing,
    a: str,
    b: str,
    goal: Goal,
    conf: float,
    note: str,
) -> dict[str, object]:
    m = {arm: np.array([arms[(arm, xv)].mean() for xv in xs]) for arm in (a, b)}
    var = np.array(
        [arms[(arm, xv)].var(ddof=1) / arms[(arm, xv)].size for arm in (a, b) for xv in xs]
    )
    df = np.array([arms[(arm, xv)].size - 1.0 for arm in (a, b) for xv in xs])
    lo, hi, open_lo, open_hi = crossing_interval(
        np.log2(xs), advantage(m[a], m[b], goal), two_arm_coefs(xs.size), var, df, conf
    )
    notes = [note] if note else []
    if np.isnan(lo):
        notes.append("the sign of the advantage is significant at every x: no crossing")
    elif np.isnan(point.x):
        notes.append("no crossover in the means, but one cannot be excluded in ci_low..ci_high")
    if not np.isnan(lo) and (open_lo or open_hi):
        ends = [w for w, o in (("first", open_lo), ("last", open_hi)) if o]
        notes.append(f"interval reaches the {' and '.join(ends)} x: not bounded by the data")
    return {"ci_low": float(2**lo), "ci_high": float(2**hi), "note": "; ".join(notes)}


def _p_boot(
    arms: Arms,
    xs: np.ndarray,
    point: Crossing,
    a: str,
    b: str,
    goal: Goal,
    n_boot: int,
    rng: np.random.Generator,
) -> float:
    boot = {
        arm: np.stack([resampled_means(arms[(arm, xv)], n_boot, rng) for xv in xs], axis=1)
        for arm in (a, b)
    }  # arm -> (n_boot, n_x)
    adv = advantage(boot[a], boot[b], goal)
    crossings = [find_crossing(xs, adv[k]) for k in range(n_boot)]
    if np.isnan(point.x):  # how often would the resamples find one?
        return float(np.mean([not np.isnan(c.x) for c in crossings]))
    return float(np.mean([c.b_better == point.b_better for c in crossings]))
