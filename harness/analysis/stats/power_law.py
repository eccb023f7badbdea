"""Speed-up as a budget ratio: the budget b needs to match a's final value.

b's tuned means over budgets D (tokens, steps, ...) are fitted with the saturating power law
L(D) = E + A * D^-alpha (scipy ``curve_fit``; for a higher-is-better metric the curve rises to E:
L(D) = E - A * D^-alpha). a's final value is its tuned mean at its largest budget D_a. Solving
L(D_b) = a's final value gives the budget b needs, reported as ratio = D_b / D_a: 0.75 reads
"b reaches a's final value with 3/4 of the budget" (the talk's Adam vs Signum). A value beyond
b's asymptote E is never reached (ratio inf).

The interval is the delta method on log(ratio) with t quantiles (Welch-Satterthwaite df over the
arms' means at every budget): the fit's sensitivity to each mean is the Gauss-Newton
(pseudo-inverse Jacobian) map, and log D_b's sensitivity to the fitted parameters and to a's
final value is closed form (:func:`budget_ratio_interval`). At 3 seeds it covers the true ratio
at its nominal level where the former percentile bootstrap did not (``docs/statistics.md``).

The fit is checked (``fit_check``) when b has more budgets than parameters: the lack-of-fit F
test of the residuals against seed noise (:func:`harness.analysis.stats.fit_check.lack_of_fit`), and
a refit without the smallest budget (the one furthest from the target, where a curve that is
not a power law bends away first). The interval spans both fits' intervals (model error between
fit windows); intervals that do not overlap are flagged.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd
from scipy.optimize import OptimizeWarning, curve_fit, minimize_scalar

from harness.analysis.stats.cells import iter_cells, with_keys
from harness.analysis.stats.defaults import CONFIDENCE
from harness.analysis.stats.fit_check import OK, intervals_disjoint, lack_of_fit
from harness.analysis.stats.frame import ARM, VALUE
from harness.analysis.stats.intervals import ONE_SEED, linear_interval
from harness.core.errors import UserError
from harness.metrics.catalogue import Goal

#: Fewest budgets of b a fit accepts (three parameters).
MIN_BUDGETS = 3
#: Output columns after the ``by`` columns.
COLUMNS = (
    "a_final",
    "budget_a",
    "budget_b",
    "ratio",
    "ci_low",
    "ci_high",
    "A",
    "alpha",
    "E",
    "fit_check",
    "note",
)


@dataclass(frozen=True, slots=True)
class PowerLaw:
    """L(D) = E + sign * A * D^-alpha."""

    A: float
    """Scale, in metric units at D = 1."""
    alpha: float
    """Exponent (> 0)."""
    E: float
    """Asymptote as D -> infinity."""
    sign: float
    """+1 when lower is better (the curve falls to E), -1 otherwise."""

    def __call__(self, d: np.ndarray | float) -> np.ndarray:
        """The curve at budgets ``d``."""
        loss: np.ndarray = self.E + self.sign * self.A * np.power(np.asarray(d, float), -self.alpha)
        return loss

    def budget_for(self, target: float) -> float:
        """The D with L(D) = target; inf when target is at or beyond the asymptote."""
        gap = self.sign * (target - self.E)
        if not np.isfinite(target) or gap <= 0 or self.A <= 0:
            return float("inf")
        return float((gap / self.A) ** (-1.0 / self.alpha))


#: Exponents searched by the fit profiling alpha out (log-spaced, then refined).
ALPHA_BOUNDS = (1e-3, 5.0)
_ALPHA_GRID = np.geomspace(*ALPHA_BOUNDS, 80)


def _linear_fit(
    z: np.ndarray, y: np.ndarray, sign: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Least squares y ~ E + sign * A * z for each row of z (n_alpha, n), with A >= 0.

    Returns (A, E, sse), each of shape (n_alpha,).
    """
    zc = z - z.mean(axis=1, keepdims=True)
    yc = y - y.mean()
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = (zc * yc).sum(axis=1) / (zc * zc).sum(axis=1)
    a = np.clip(np.nan_to_num(sign * slope), 0.0, None)
    e = y.mean() - sign * a * z.mean(axis=1)
    sse = ((y - e[:, None] - sign * a[:, None] * z) ** 2).sum(axis=1)
    return a, e, sse


def _profile_fit(u: np.ndarray, y: np.ndarray, sign: float) -> tuple[float, float, float]:
    """(A, alpha, E) minimising the squared error: exact in (A, E) for each alpha, then alpha
    on a log grid refined by a bounded scalar search."""
    _, _, sse = _linear_fit(np.power(u[None, :], -_ALPHA_GRID[:, None]), y, sign)
    i = int(np.argmin(sse))
    lo, hi = np.log(_ALPHA_GRID[max(i - 1, 0)]), np.log(_ALPHA_GRID[min(i + 1, len(sse) - 1)])

    def err(log_alpha: float) -> float:
        return float(_linear_fit(np.power(u, -np.exp(log_alpha))[None, :], y, sign)[2][0])

    best = minimize_scalar(err, bounds=(lo, hi), method="bounded", options={"xatol": 1e-8})
    alpha = float(np.exp(best.x)) if best.fun <= sse[i] else float(_ALPHA_GRID[i])
    a, e, _ = _linear_fit(np.power(u, -alpha)[None, :], y, sign)
    return float(a[0]), alpha, float(e[0])


def fit_power_law(d: np.ndarray, y: np.ndarray, goal: Goal, *, polish: bool = True) -> PowerLaw:
    """Least-squares fit of :class:`PowerLaw` to (d, y).

    Budgets are scaled by max(d) inside. The fit profiles out (A, E), which are linear for a
    fixed alpha, searches alpha in :data:`ALPHA_BOUNDS`, then (``polish``) refines all three
    with scipy ``curve_fit`` from there, keeping whichever fits better. A >= 0 always: data
    that do not improve with the budget give A = 0 (a flat curve that never reaches a target).
    """
    d, y = np.asarray(d, float), np.asarray(y, float)
    sign = 1.0 if goal == "min" else -1.0
    ref = d.max()
    u = d / ref
    a, alpha, e = _profile_fit(u, y, sign)
    if polish and a > 0:
        a, alpha, e = _polish(u, y, sign, (a, alpha, e))
    return PowerLaw(A=float(a * ref**alpha), alpha=float(alpha), E=float(e), sign=sign)


def _polish(
    u: np.ndarray, y: np.ndarray, sign: float, start: tuple[float, float, float]
) -> tuple[float, float, float]:
    def f(u_: np.ndarray, a_: float, alpha_: float, e_: float) -> np.ndarray:
        loss: np.ndarray = e_ + sign * a_ * np.power(u_, -alpha_)
        return loss

    def sse(p: Sequence[float]) -> float:
        return float(((f(u, *p) - y) ** 2).sum())

    lower, upper = [0.0, ALPHA_BOUNDS[0], -np.inf], [np.inf, ALPHA_BOUNDS[1], np.inf]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OptimizeWarning)
            p, _ = curve_fit(f, u, y, p0=start, bounds=(lower, upper), maxfev=2000)
    except (RuntimeError, ValueError):
        return start
    if sse(p) > sse(start):
        return start
    a, alpha, e = (float(v) for v in p)
    return a, alpha, e


def speedup(
    seeds: pd.DataFrame,
    by: Sequence[str],
    x: str,
    a: str,
    b: str,
    goal: Goal,
    *,
    confidence: float = CONFIDENCE,
) -> pd.DataFrame:
    """Budget ratio b needs to match a's final value, per cell, with a delta-method interval.

    Args:
        seeds: one row per seed of each tuned configuration: ``by``, ``x``, ``arm``, ``value``.
        by: cell columns.
        x: the budget column (tokens, steps, ...).
        a: label of the arm whose final value is the target.
        b: label of the arm whose curve is fitted.
        goal: ``min`` or ``max``.
        confidence: two-sided level of the interval.

    Returns:
        One row per cell: ``by`` then :data:`COLUMNS` (A, alpha, E: the fit of b).

    Raises:
        UserError: b has fewer than 3 budgets with finite means in a cell.
    """
    parts = []
    for key, cell in iter_cells(seeds, by):
        row = _cell(cell, key, x, a, b, goal, confidence)
        parts.append(with_keys(pd.DataFrame([row]), key))
    return pd.concat(parts, ignore_index=True)[[*by, *COLUMNS]]


def _arm(cell: pd.DataFrame, arm: str, x: str) -> dict[float, np.ndarray]:
    sub = cell[cell[ARM] == arm]
    return {float(cast(float, xv)): g[VALUE].to_numpy(float) for xv, g in sub.groupby(x)}


def _usable_budgets(
    cell: pd.DataFrame, key: dict[str, Any], x: str, a: str, b: str
) -> tuple[dict[float, np.ndarray], dict[float, np.ndarray], list[str]]:
    """(a's seeds by budget, b's finite budgets, notes); refuses too few budgets of b."""
    va, vb = _arm(cell, a, x), _arm(cell, b, x)
    diverged = [d for d, v in vb.items() if not np.isfinite(v.mean())]
    notes = [f"{b} diverged at {x}={', '.join(f'{d:g}' for d in diverged)}: not fitted"]
    vb = {d: v for d, v in vb.items() if d not in diverged}
    if len(vb) < MIN_BUDGETS or not va:
        where = ", ".join(f"{k}={v}" for k, v in key.items()) or "the data"
        raise UserError(
            f"speedup needs at least {MIN_BUDGETS} values of {x} for {b} and one for {a}; "
            f"{where} has {len(vb)} for {b} and {len(va)} for {a}"
        )
    return va, vb, notes if diverged else []


def budget_ratio_interval(
    d: np.ndarray,
    b_stats: tuple[np.ndarray, ...],
    a_stats: tuple[float, ...],
    budget_a: float,
    goal: Goal,
    confidence: float = CONFIDENCE,
    *,
    polish: bool = True,
) -> tuple[float, float, float]:
    """(ratio, low, high): b's budget to reach a's final mean over ``budget_a``, and its
    delta-method interval.

    Args:
        d: b's budgets, increasing, shape (k,).
        b_stats: b's (means, seed variances, seed counts) at ``d``, each shape (k,).
        a_stats: a's (mean, seed variance, seed count) at its largest budget.
        budget_a: that budget.
        goal: ``min`` or ``max``.
        confidence: two-sided level.
        polish: passed to :func:`fit_power_law` (the coverage simulation skips the polish to
            run fast; the fit profiling alpha out is exact in A and E and refines alpha to 1e-8).

    In u = D / max(d) the fit is L = E + s a u^-alpha. With J the Jacobian of L at the budgets
    in (a, alpha, E), the parameters move with the means as pinv(J); log u_b =
    -(1/alpha) log(s (target - E) / a) moves with (a, alpha, E, target) as written in the code.
    The interval is exp(log ratio +- t * se), NaN when the target is never reached or the fit
    is degenerate (A = 0).
    """
    means, vars_, ns = (np.asarray(v, float) for v in b_stats)
    fit = fit_power_law(d, means, goal, polish=polish)
    budget_b = fit.budget_for(a_stats[0])
    ratio = budget_b / budget_a
    if not np.isfinite(budget_b) or fit.A <= 0:
        return ratio, float("nan"), float("nan")
    ref = float(np.max(d))
    u, s, al = np.asarray(d, float) / ref, fit.sign, fit.alpha
    a_u = fit.A * ref**-al  # the scale in u
    pw = np.power(u, -al)
    jac = np.stack([s * pw, -s * a_u * pw * np.log(u), np.ones_like(u)], axis=1)  # (k, 3)
    g = s * (a_stats[0] - fit.E)  # > 0 when reachable
    grad_theta = np.array([1.0 / (al * a_u), np.log(g / a_u) / al**2, s / (al * g)])
    grad_b = grad_theta @ np.linalg.pinv(jac)  # d log u_b / d mean_j, shape (k,)
    grad_a = -s / (al * g)
    weights = [grad_b**2 * vars_ / ns, np.array(grad_a**2 * a_stats[1] / a_stats[2])]
    dfs = [ns - 1.0, np.array(a_stats[2] - 1.0)]
    lo, hi = linear_interval(
        np.log(ratio), [*weights[0], weights[1]], [*dfs[0], dfs[1]], confidence
    )
    return ratio, float(np.exp(lo)), float(np.exp(hi))


def checked(
    fit: PowerLaw,
    d: np.ndarray,
    b_stats: tuple[np.ndarray, ...],
    a_stats: tuple[float, ...],
    budget_a: float,
    goal: Goal,
    conf: float,
    ci: tuple[float, float],
    *,
    polish: bool = True,
) -> tuple[float, float, list[str]]:
    """The interval ``ci`` widened over fit windows, and the checks (module docstring): (low,
    high, the reasons ``fit_check`` prints; empty when ok). ``polish`` as for
    :func:`budget_ratio_interval`."""
    if d.size <= MIN_BUDGETS:
        return ci[0], ci[1], [f"unchecked: {d.size} budgets, as many as parameters"]
    means, vars_, ns = b_stats
    checks = []
    test = lack_of_fit(means - fit(d), np.sqrt(vars_), ns, 3)
    if test.rejected:
        checks.append(f"lack of fit: the power law misses b's means (F test p = {test.p:.2g})")
    sub = tuple(v[1:] for v in b_stats)
    _, lo2, hi2 = budget_ratio_interval(d[1:], sub, a_stats, budget_a, goal, conf, polish=polish)
    if not (np.isfinite(lo2) and np.isfinite(hi2)):
        return ci[0], ci[1], [*checks, "unchecked window: no ratio without the smallest budget"]
    if np.isfinite(ci).all() and intervals_disjoint(ci, (lo2, hi2)):
        checks.append("window-sensitive: the fit without the smallest budget disagrees")
    return float(np.nanmin([ci[0], lo2])), float(np.nanmax([ci[1], hi2])), checks


def _cell(
    cell: pd.DataFrame, key: dict[str, Any], x: str, a: str, b: str, goal: Goal, conf: float
) -> dict[str, object]:
    va, vb, notes = _usable_budgets(cell, key, x, a, b)
    checks: list[str] = []
    budget_a = max(va)
    a_final = float(va[budget_a].mean())
    d = np.array(sorted(vb))
    fit = fit_power_law(d, np.array([vb[k].mean() for k in d]), goal)
    budget_b = fit.budget_for(a_final)
    lo, hi = float("nan"), float("nan")
    if min(v.size for v in [va[budget_a], *vb.values()]) < 2:
        notes.append(ONE_SEED)
        checks.append("unchecked: no seed noise to check against")
    elif not np.isfinite(va[budget_a]).all():
        notes.append(f"{a} diverged at its largest {x}: no interval")
        checks.append("unchecked: no interval")
    else:
        b_stats = tuple(np.array([f(vb[k]) for k in d]) for f in _SUMMARY)
        a_stats = tuple(float(f(va[budget_a])) for f in _SUMMARY)
        _, lo, hi = budget_ratio_interval(d, b_stats, a_stats, budget_a, goal, conf)
        lo, hi, checks = checked(fit, d, b_stats, a_stats, budget_a, goal, conf, (lo, hi))
    if np.isinf(budget_b):
        notes.append(f"{a}'s final value is beyond {b}'s asymptote E")
    elif not d[0] <= budget_b <= d[-1]:
        notes.append(f"extrapolated outside {b}'s budgets {d[0]:g}..{d[-1]:g}")
    return {
        "a_final": a_final,
        "budget_a": budget_a,
        "budget_b": budget_b,
        "ratio": budget_b / budget_a,
        "ci_low": lo,
        "ci_high": hi,
        "A": fit.A,
        "alpha": fit.alpha,
        "E": fit.E,
        "fit_check": "; ".join(checks) or OK,
        "note": "; ".join(notes),
    }


#: (mean, seed variance, n) of an array of seeds.
_SUMMARY = (np.mean, lambda v: np.var(v, ddof=1), np.size)
