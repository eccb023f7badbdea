"""The fitted optimum of a tuned axis (learning rate), with intervals over seeds: the statistics
behind ``analyze optimum`` (:mod:`harness.analysis.questions.optimum`) and ``--tuned fit``.

In each cell (``--by``, and each optimizer when several are present) the other tuned
hyperparameters are set to their best at every value of the axis (as in the ``lr_sensitivity``
figure). Around the best grid point (it and up to :data:`WINDOW` finite neighbours on each side),
the seed means are fitted by least squares with a quadratic in u = log(axis):
m(u) = c0 + c1 (u - u_bar) + c2 (u - u_bar)^2. The fitted optimum is u* = u_bar - c1 / (2 c2),
and the metric there m* = m(u*).

Both are linear in the points' means, or a ratio of such: u* - u_bar is the ratio -c1 / (2 c2),
whose interval is Fieller's (:func:`harness.analysis.stats.intervals.ratio_interval`); m* moves with
the means as c0 + d c1 + d^2 c2 at d = u* - u_bar (the derivative in u vanishes at the optimum),
whose interval is Welch's (t quantiles, Welch-Satterthwaite df). A fit without a minimum (a
maximum for a higher-is-better metric) has no optimum; an optimum outside the searched values is
flagged, as is an interval that reaches beyond them.

The window check (:func:`_window_check`) refits over a sub-window of the main one: the three
points around the best, or where those do not bound the optimum within their noise, the four
nearer the best. A bounded sub-window's interval is spanned (the reported interval covers both:
model error between windows) and a disjoint one flagged ``window-sensitive``; an unbounded one
is still a test, flagged where it rejects the whole main interval, and what it accepts within
the main window is spanned. ``fit_check`` also carries the
main fit's lack-of-fit F test. On a correctly specified quadratic about 6 % of cells carry a flag
(``docs/statistics.md``, "The optimum's window check").

:func:`fitted_seeds` gives each seed's value at the fitted optimum (the seed's own quadratic
through the same points, evaluated at u*): the values ``--tuned fit`` hands to ``gap``,
``compare`` and ``crossover``. Their mean is m*.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.analysis.stats.cells import groups, iter_cells
from harness.analysis.stats.defaults import CONFIDENCE
from harness.analysis.stats.fit_check import OK, approximately_best, intervals_disjoint, lack_of_fit
from harness.analysis.stats.frame import VALUE
from harness.analysis.stats.intervals import linear_interval, ratio_accepts, ratio_interval
from harness.metrics.catalogue import Goal

#: Finite neighbours of the best grid point on each side used by the fit.
WINDOW = 2
#: Points across the main window's range, and as many across the main fit's optimum interval
#: (ends included, evenly spaced in log axis), at which a sub-window's unbounded confidence set
#: is tested (:func:`_accepted`).
TESTED_POINTS = 17
#: Output columns after the cell columns.
COLUMNS = (
    "grid_best",
    "grid_mean",
    "optimum",
    "ci_low",
    "ci_high",
    "metric",
    "metric_ci_low",
    "metric_ci_high",
    "points",
    "searched",
    "fit_check",
    "band_low",
    "band_high",
    "note",
)


@dataclass(frozen=True, slots=True)
class Fit:
    """A quadratic fit around the best point of one cell."""

    u: np.ndarray
    """log(axis) of the fitted points."""
    weights: np.ndarray
    """(3, k): the coefficients (c0, c1, c2) as linear maps of the points' means."""
    u_bar: float
    """The centre of the fitted u."""
    coef: np.ndarray
    """(c0, c1, c2)."""

    @property
    def convex(self) -> bool:
        """Whether the fit has a minimum (c2 > 0)."""
        return bool(self.coef[2] > 0)

    @property
    def d(self) -> float:
        """u* - u_bar."""
        return float(-self.coef[1] / (2 * self.coef[2]))

    def at_optimum(self) -> np.ndarray:
        """(k,): the weights of the points' means in m*."""
        d = self.d
        value: np.ndarray = self.weights[0] + d * self.weights[1] + d * d * self.weights[2]
        return value


def fit(u: np.ndarray, means: np.ndarray, sign: float) -> Fit:
    """Least-squares quadratic in u of ``sign * means`` (sign -1 turns a maximum into a
    minimum)."""
    u_bar = float(u.mean())
    x = np.stack([np.ones_like(u), u - u_bar, (u - u_bar) ** 2], axis=1)
    weights = np.linalg.pinv(x)
    return Fit(u=u, weights=weights, u_bar=u_bar, coef=weights @ (sign * means))


def window(means: np.ndarray, sign: float, width: int = WINDOW) -> np.ndarray:
    """Indices of the best finite point and up to ``width`` finite neighbours each side."""
    finite = np.flatnonzero(np.isfinite(means))
    if finite.size == 0:
        return finite
    best = int(np.argmin(sign * means[finite]))
    return finite[max(0, best - width) : best + width + 1]


def local_window(means: np.ndarray, sign: float) -> np.ndarray:
    """The three consecutive finite points around the best one (shifted inward at an end of
    the grid): the fit least exposed to the curve's shape away from the optimum."""
    finite = np.flatnonzero(np.isfinite(means))
    if finite.size < 3:
        return finite[:0]
    best = int(np.argmin(sign * means[finite]))
    start = min(max(best - 1, 0), finite.size - 3)
    return finite[start : start + 3]


def _parts(f: Fit, var: np.ndarray, n: np.ndarray) -> list[tuple[float, float, float, float]]:
    """Fieller's parts of u* - u_bar = -c1 / (2 c2): per point (weight in -c1, weight in 2 c2,
    variance of its mean, df)."""
    return [(-f.weights[1, j], 2 * f.weights[2, j], var[j], n[j] - 1) for j in range(f.u.size)]


def _metric_interval(
    f: Fit, var: np.ndarray, n: np.ndarray, metric: float, conf: float
) -> tuple[float, float]:
    """The interval of m* of one (convex) fit."""
    w = f.at_optimum()
    m_lo, m_hi = linear_interval(metric, list(w**2 * var), list(n - 1.0), conf)
    return float(m_lo), float(m_hi)


def _intervals(
    f: Fit, var: np.ndarray, n: np.ndarray, metric: float, conf: float
) -> tuple[tuple[float, float], tuple[float, float]]:
    """(interval of u*, interval of m*) of one fit, from its points' variances of the mean."""
    lo, hi = ratio_interval(-f.coef[1], 2 * f.coef[2], _parts(f, var, n), conf)
    u = (float(f.u_bar + lo), float(f.u_bar + hi))
    return u, _metric_interval(f, var, n, metric, conf)


@dataclass(frozen=True, slots=True)
class WindowCheck:
    """The window check of one cell: the fits over the sub-windows of the main window."""

    span: tuple[float, float] | None
    """The optimum's values (in u) that the reported interval spans besides the main fit's:
    the first bounded sub-window's interval, or where none is bounded, the values of the main
    window's range that the first sub-window's test accepts (model error between windows)."""
    metric_span: tuple[float, float] | None
    """The interval of m* of the first bounded sub-window (spanned likewise); None when none."""
    flags: tuple[str, ...]
    """The sub-windows' disagreements with the main fit (empty: they agree within noise)."""


def _inner_window(means: np.ndarray, idx: np.ndarray, sign: float) -> np.ndarray:
    """The main window less its end farther from the best point (4 of 5 points): the next
    sub-window where the three points around the best do not bound the optimum (too flat
    within their noise)."""
    if idx.size < 5:
        return idx[:0]
    best = int(idx[np.nanargmin(sign * means[idx])])
    far_left = best - idx[0] >= idx[-1] - best
    return idx[1:] if far_left else idx[:-1]


def _sub_windows(pts: np.ndarray, idx: np.ndarray, sign: float) -> list[np.ndarray]:
    """The sub-windows tried, in order: the three points around the best, then the main
    window's four points nearer the best; each with a spare point less than the main window
    and two or more seeds at every point."""
    subs = (local_window(pts[:, 1], sign), _inner_window(pts[:, 1], idx, sign))
    return [s for s in subs if 3 <= s.size < idx.size and pts[s, 3].min() >= 2]


def _window_check(
    pts: np.ndarray, idx: np.ndarray, sign: float, conf: float, main: tuple[float, float]
) -> WindowCheck | None:
    """The window check of the main fit over ``idx`` (its optimum interval ``main``, in u);
    None when no sub-window can be fitted (the main window has 3 points: none to spare).

    A sub-window's fit whose Fieller interval of u* is bounded and a minimum is spanned and
    compared (intervals that do not overlap: ``window-sensitive``). One whose curvature is not
    significantly nonzero has an unbounded confidence set (two rays or the whole line), but it
    is still a test, so the check runs: the windows disagree where that test rejects every tested
    point of the main interval (:func:`_accepted`); where no sub-window is bounded, the first
    one's accepted values within the main window's range are spanned (the set cut to the window:
    the points nearest the best may put the optimum anywhere there). A curvature significantly
    of the wrong sign (a maximum) is a disagreement too. The next sub-window is tried until one
    is bounded.
    """
    subs = _sub_windows(pts, idx, sign)
    if not subs:
        return None
    flags: list[str] = []
    unbounded: list[tuple[float, float]] = []  # the accepted range of each unbounded sub-window
    for sub in subs:
        f = fit(np.log(pts[sub, 0]), pts[sub, 1], sign)
        var, n = pts[sub, 2] ** 2 / pts[sub, 3], pts[sub, 3]
        parts = _parts(f, var, n)
        lo, hi = ratio_interval(-f.coef[1], 2 * f.coef[2], parts, conf)
        if np.isfinite([lo, hi]).all() and f.convex:
            u = (float(f.u_bar + lo), float(f.u_bar + hi))
            m = _metric_interval(f, var, n, float(sign * (f.coef @ [1, f.d, f.d**2])), conf)
            if intervals_disjoint(main, u):
                flags.append(
                    f"window-sensitive: the {sub.size}-point fit's interval does not overlap"
                )
            return WindowCheck(span=u, metric_span=m, flags=tuple(flags))
        if np.isfinite([lo, hi]).all():
            flags.append(
                f"window-sensitive: the {sub.size}-point fit around the best curves significantly "
                "the wrong way (no optimum there)"
            )
            continue
        window = (float(np.log(pts[idx[0], 0])), float(np.log(pts[idx[-1], 0])))
        accepted = _accepted(f, parts, window, main, conf)
        if np.isfinite(main).all() and not ((accepted >= main[0]) & (accepted <= main[1])).any():
            flags.append(
                f"window-sensitive: the {sub.size}-point fit rejects every optimum in the "
                f"{idx.size}-point fit's interval"
            )
        if accepted.size:
            unbounded.append((float(accepted.min()), float(accepted.max())))
    span = unbounded[0] if unbounded else None
    return WindowCheck(span=span, metric_span=None, flags=tuple(flags))


def _accepted(
    f: Fit,
    parts: list[tuple[float, float, float, float]],
    window: tuple[float, float],
    main: tuple[float, float],
    conf: float,
) -> np.ndarray:
    """The values of u that an unbounded sub-window fit's test accepts as its optimum, among
    :data:`TESTED_POINTS` points across the main window's range and as many across the main
    fit's interval (where finite)."""
    grid = [np.linspace(window[0], window[1], TESTED_POINTS)]
    if np.isfinite(main).all():
        grid.append(np.linspace(main[0], main[1], TESTED_POINTS))
    at = np.concatenate(grid)
    ok = [ratio_accepts(-f.coef[1], 2 * f.coef[2], parts, float(a - f.u_bar), conf) for a in at]
    accepted: np.ndarray = at[np.asarray(ok, bool)]
    return accepted


def _cell_fit(pts: np.ndarray, axis: str, goal: Goal, conf: float) -> dict[str, object]:
    """``pts``: (k, 4) rows of (axis value, mean, std, n), sorted by the axis."""
    sign = 1.0 if goal == "min" else -1.0
    values, means = pts[:, 0], pts[:, 1]
    row: dict[str, object] = dict.fromkeys(COLUMNS, np.nan)
    best = int(np.nanargmin(np.where(np.isfinite(means), sign * means, np.inf)))
    row |= {"grid_best": values[best], "grid_mean": means[best], "note": ""}
    row["searched"] = f"{values.min():g}..{values.max():g}"
    row |= _band(pts, sign, conf)
    idx = window(means, sign)
    row["points"] = idx.size
    if idx.size < 3:
        return row | {
            "note": f"fewer than 3 finite values of {axis}: no fit",
            "fit_check": "no fit",
        }
    f = fit(np.log(values[idx]), means[idx], sign)
    if not f.convex:
        note = "the fit has no interior optimum (not curved toward one)"
        return row | {"note": note, "fit_check": "no fit: " + note}
    u_star = f.u_bar + f.d
    metric = float(sign * (f.coef @ [1, f.d, f.d**2]))
    row |= {"optimum": float(np.exp(u_star)), "metric": metric}
    notes = []
    if not np.log(values.min()) <= u_star <= np.log(values.max()):
        notes.append(f"fitted optimum outside the searched {axis} {row['searched']}")
    std, n = pts[idx, 2], pts[idx, 3]
    if n.min() < 2 or not np.isfinite(std).all():
        note = "n = 1 (or a diverged seed): no interval"
        return row | {"note": "; ".join([*notes, note]), "fit_check": "unchecked: " + note}
    if not (std > 0).any():
        note = "identical seeds (zero seed variance): no interval"
        return row | {"note": "; ".join([*notes, note]), "fit_check": "unchecked: " + note}
    (lo, hi), (m_lo, m_hi) = _intervals(f, std**2 / n, n, metric, conf)
    checks = _checks(f, pts[idx], sign)
    windows = _window_check(pts, idx, sign, conf, (lo, hi))
    if windows is None:
        checks.append("unchecked: 3 points fit the quadratic exactly (no spare point to test it)")
    else:
        checks += windows.flags
    if windows is not None and windows.span is not None:  # model error: span both windows
        lo, hi = min(lo, windows.span[0]), max(hi, windows.span[1])
    if windows is not None and windows.metric_span is not None:
        m_lo, m_hi = min(m_lo, windows.metric_span[0]), max(m_hi, windows.metric_span[1])
    row |= {"ci_low": float(np.exp(lo)), "ci_high": float(np.exp(hi))}
    if not (np.log(values.min()) <= lo and hi <= np.log(values.max())):
        notes.append(f"optimum interval reaches beyond the searched {axis}")
    if sign * (means[best] - metric) > abs(m_hi - m_lo):  # better than seen, beyond noise
        checks.append(f"fitted metric {metric:.4g} far beyond the best observed {means[best]:.4g}")
    checks += _outside_observed(values, means, u_star, (m_lo, m_hi), axis, str(row["searched"]))
    row |= {"metric_ci_low": float(m_lo), "metric_ci_high": float(m_hi)}
    return row | {"note": "; ".join(notes), "fit_check": "; ".join(checks) or OK}


def _outside_observed(
    values: np.ndarray,
    means: np.ndarray,
    u_star: float,
    metric_ci: tuple[float, float],
    axis: str,
    searched: str,
) -> list[str]:
    """Flags of fitted values outside what was observed: an optimum beyond the searched
    values (an extrapolation), a metric interval crossing zero where every observed mean has
    one sign (a loss or a perplexity below 0: a value the metric never takes)."""
    out = []
    if not np.log(values.min()) <= u_star <= np.log(values.max()):
        out.append(
            f"extrapolated: the fitted optimum {np.exp(u_star):.3g} is outside the "
            f"searched {axis} {searched}"
        )
    seen = means[np.isfinite(means)]
    lo, hi = metric_ci
    if ((seen > 0).all() and lo < 0) or ((seen < 0).all() and hi > 0):
        side = "below" if lo < 0 else "above"
        out.append(
            f"metric interval [{lo:.4g}, {hi:.4g}] reaches {side} 0 where every observed "
            "mean is on the other side: the fit is not the curve there"
        )
    return out


def _checks(f: Fit, pts: np.ndarray, sign: float) -> list[str]:
    """The lack-of-fit test of the main fit (``pts``: its points)."""
    x = np.stack([np.ones_like(f.u), f.u - f.u_bar, (f.u - f.u_bar) ** 2], axis=1)
    test = lack_of_fit(sign * pts[:, 1] - x @ f.coef, pts[:, 2], pts[:, 3], 3)
    if test.rejected:
        return [f"lack of fit: residuals exceed seed noise (F test p = {test.p:.2g})"]
    return []


def _band(pts: np.ndarray, sign: float, conf: float) -> dict[str, object]:
    """The approximately-best band's columns (:func:`.fit_check.approximately_best`)."""
    ok = np.isfinite(pts[:, 1])
    if not ok.any():
        return {}
    band = approximately_best(pts[ok, 0], pts[ok, 1], pts[ok, 2], pts[ok, 3], sign, conf)
    return {"band_low": band.low, "band_high": band.high}


def optimum_table(
    table: pd.DataFrame, cells: Sequence[str], axis: str, goal: Goal, confidence: float = CONFIDENCE
) -> pd.DataFrame:
    """One row per cell of ``table``, the metric along the axis (one row per cell and axis
    value, with mean, std, n: :func:`harness.analysis.rows.tuning.tune` by ``[*cells, axis]``)."""
    ordered = table.sort_values([*cells, axis], kind="stable").reset_index(drop=True)
    arr = ordered[[axis, "mean", "std", "n"]].to_numpy(float)
    rows = []
    for key, pos in groups(ordered, cells).indices.items():
        values = key if isinstance(key, tuple) else (key,)
        head = dict(zip(cells, values, strict=False))
        rows.append(head | _cell_fit(arr[np.sort(pos)], axis, goal, confidence))
    return pd.DataFrame(rows)[[*cells, *COLUMNS]]


def fitted_seeds(
    table: pd.DataFrame, seeds: pd.DataFrame, cells: Sequence[str], axis: str, goal: Goal
) -> tuple[pd.DataFrame, list[str]]:
    """Each seed's value at its cell's fitted optimum (see the module docstring): one row per
    (cell, seed) with ``value``; cells without a fit keep their best grid point's seeds.

    Returns:
        (rows, notes): the notes name the cells that fell back to the grid.
    """
    sign = 1.0 if goal == "min" else -1.0
    out, notes = [], []
    for key, cell in iter_cells(table, cells):
        pts = cell.sort_values(axis)
        values, means = pts[axis].to_numpy(float), pts["mean"].to_numpy(float)
        mine = seeds
        for k, v in key.items():
            mine = mine[mine[k].isna()] if pd.isna(v) else mine[mine[k] == v]
        idx = window(means, sign)
        f = fit(np.log(values[idx]), means[idx], sign) if idx.size >= 3 else None
        by_seed = mine.pivot_table(index="seed", columns=axis, values=VALUE, aggfunc="first")
        cols = [v for v in values[idx] if v in by_seed.columns]
        matched = by_seed[cols].dropna() if f is not None and len(cols) == idx.size else None
        if f is None or not f.convex or matched is None or matched.empty:
            best = values[int(np.nanargmin(np.where(np.isfinite(means), sign * means, np.inf)))]
            out.append(mine[mine[axis] == best])
            where = ", ".join(f"{k}={v}" for k, v in key.items()) or "the cell"
            notes.append(f"--tuned fit: {where} has no fitted optimum: its best grid point used")
            continue
        fitted = matched.to_numpy(float) @ f.at_optimum()
        first = mine[mine[axis] == values[idx[0]]].drop_duplicates("seed").set_index("seed")
        rows = first.loc[matched.index].reset_index()
        out.append(rows.assign(**{VALUE: fitted, axis: float(np.exp(f.u_bar + f.d))}))
    return pd.concat(out, ignore_index=True), notes
