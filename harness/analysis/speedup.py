"""Speed-up as a budget ratio: the budget b needs to match a's final value.

b's tuned means over budgets D (tokens, steps, ...) are fitted with the saturating power law
L(D) = E + A * D^-alpha (scipy ``curve_fit``; for a higher-is-better metric the curve rises to E:
L(D) = E - A * D^-alpha). a's final value is its tuned mean at its largest budget D_a. Solving
L(D_b) = a's final value gives the budget b needs, reported as ratio = D_b / D_a: 0.75 reads
"b reaches a's final value with 3/4 of the budget" (the talk's Adam vs Signum). A value beyond
b's asymptote E is never reached (ratio inf). The interval is a percentile bootstrap over seeds
at every budget of both arms, refitting each resample.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.optimize import OptimizeWarning, curve_fit, minimize_scalar

from harness.analysis.bootstrap import CONFIDENCE, interval, resampled_means
from harness.analysis.cells import iter_cells, with_keys
from harness.analysis.select import ARM
from harness.analysis.values import VALUE
from harness.core.errors import UserError

#: Default bootstrap resamples for speed-up (each one is a curve fit).
N_BOOT_FIT = 500
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
        return self.E + self.sign * self.A * np.power(np.asarray(d, float), -self.alpha)

    def budget_for(self, target: float) -> float:
        """The D with L(D) = target; inf when target is at or beyond the asymptote."""
        gap = self.sign * (target - self.E)
        if not np.isfinite(target) or gap <= 0 or self.A <= 0:
            return float("inf")
        return float((gap / self.A) ** (-1.0 / self.alpha))


#: Exponents searched by the profile fit (log-spaced, then refined).
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


def fit_power_law(d: np.ndarray, y: np.ndarray, goal: str, *, polish: bool = True) -> PowerLaw:
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


def _polish(u: np.ndarray, y: np.ndarray, sign: float, start: tuple[float, float, float]):
    def f(u_, a_, alpha_, e_):
        return e_ + sign * a_ * np.power(u_, -alpha_)

    def sse(p) -> float:
        return float(((f(u, *p) - y) ** 2).sum())

    lower, upper = [0.0, ALPHA_BOUNDS[0], -np.inf], [np.inf, ALPHA_BOUNDS[1], np.inf]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OptimizeWarning)
            p, _ = curve_fit(f, u, y, p0=start, bounds=(lower, upper), maxfev=2000)
    except (RuntimeError, ValueError):
        return start
    return tuple(float(v) for v in p) if sse(p) <= sse(start) else start


def speedup(
    seeds: pd.DataFrame,
    by: Sequence[str],
    x: str,
    a: str,
    b: str,
    goal: str,
    *,
    n_boot: int = N_BOOT_FIT,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> pd.DataFrame:
    """Budget ratio b needs to match a's final value, per cell, with a bootstrap interval.

    Args:
        seeds: one row per seed of each tuned configuration: ``by``, ``x``, ``arm``, ``value``.
        by: cell columns.
        x: the budget column (tokens, steps, ...).
        a: label of the arm whose final value is the target.
        b: label of the arm whose curve is fitted.
        goal: ``min`` or ``max``.
        n_boot: bootstrap resamples (each refits the curve).
        confidence: two-sided level of the interval.
        seed: random seed of the resampling.

    Returns:
        One row per cell: ``by`` then :data:`COLUMNS` (A, alpha, E: the fit of b).

    Raises:
        UserError: b has fewer than 3 budgets with finite means in a cell.
    """
    rng = np.random.default_rng(seed)
    parts = []
    for key, cell in iter_cells(seeds, by):
        row = _cell(cell, key, x, a, b, goal, n_boot, confidence, rng)
        parts.append(with_keys(pd.DataFrame([row]), key))
    return pd.concat(parts, ignore_index=True)[[*by, *COLUMNS]]


def _arm(cell: pd.DataFrame, arm: str, x: str) -> dict[float, np.ndarray]:
    sub = cell[cell[ARM] == arm]
    return {float(xv): g[VALUE].to_numpy(float) for xv, g in sub.groupby(x)}


def _usable_budgets(cell, key, x, a, b) -> tuple[dict, dict, list[str]]:
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


def _cell(cell, key, x, a, b, goal, n_boot, conf, rng) -> dict[str, object]:
    va, vb, notes = _usable_budgets(cell, key, x, a, b)
    budget_a = max(va)
    a_final = float(va[budget_a].mean())
    d = np.array(sorted(vb))
    fit = fit_power_law(d, np.array([vb[k].mean() for k in d]), goal)
    budget_b = fit.budget_for(a_final)
    if min(v.size for v in [va[budget_a], *vb.values()]) < 2:
        samples = np.full(n_boot, np.nan)
        notes.append("n = 1 somewhere: no interval")
    else:
        samples = _boot(va[budget_a], vb, d, goal, n_boot, rng)
        if failed := int(np.isnan(samples).sum()):
            notes.append(f"{failed} of {n_boot} bootstrap fits failed")
    lo, hi = interval(samples / budget_a, conf)
    if np.isinf(budget_b):
        notes.append(f"{a}'s final value is beyond {b}'s asymptote E")
    elif not d[0] <= budget_b <= d[-1]:
        notes.append(f"extrapolated outside {b}'s budgets {d[0]:g}..{d[-1]:g}")
    return {
        "a_final": a_final, "budget_a": budget_a, "budget_b": budget_b,
        "ratio": budget_b / budget_a, "ci_low": lo, "ci_high": hi,
        "A": fit.A, "alpha": fit.alpha, "E": fit.E, "note": "; ".join(notes),
    }  # fmt: skip


def _boot(va_final, vb, d, goal, n_boot, rng) -> np.ndarray:
    target = resampled_means(va_final, n_boot, rng)  # (n_boot,)
    curves = np.stack([resampled_means(vb[k], n_boot, rng) for k in d], axis=1)  # (n_boot, n_d)
    out = np.full(n_boot, np.nan)
    for i in range(n_boot):
        with contextlib.suppress(RuntimeError, ValueError):
            out[i] = fit_power_law(d, curves[i], goal, polish=False).budget_for(target[i])
    return out
