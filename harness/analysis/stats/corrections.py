"""Multiple-comparison corrections of p-values over the cells of one command."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def holm(p: np.ndarray) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (family-wise error control); NaN stays NaN.

    Sorted ascending p_(1..m): adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)).
    """
    p = np.asarray(p, dtype=float)
    out = np.full_like(p, np.nan)
    ok = ~np.isnan(p)
    m = int(ok.sum())
    if m == 0:
        return out
    order = np.argsort(p[ok], kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[ok][order])
    adj = np.empty(m)
    adj[order] = np.maximum.accumulate(scaled)
    out[ok] = adj
    return out


def bh(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (false-discovery-rate control); NaN stays NaN.

    Sorted ascending p_(1..m): adj_(i) = min_{j >= i} min(1, m / j * p_(j)).
    """
    p = np.asarray(p, dtype=float)
    out = np.full_like(p, np.nan)
    ok = ~np.isnan(p)
    m = int(ok.sum())
    if m == 0:
        return out
    order = np.argsort(p[ok], kind="stable")
    scaled = m / np.arange(1, m + 1) * p[ok][order]
    adj = np.empty(m)
    adj[order] = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    out[ok] = adj
    return out


def _none(p: np.ndarray) -> np.ndarray:
    return np.asarray(p, dtype=float).copy()


#: ``--correction`` name -> function of the p-values of all cells.
CORRECTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "none": _none,
    "holm": holm,
    "bh": bh,
}


#: A correction over a family wider than one table (``--family``): (raw p-values, the claim key
#: of each) -> adjusted p-values. The caller records the claims and corrects over all of them.
Adjust = Callable[[np.ndarray, Sequence[str]], np.ndarray]


def reading_levels(
    p: np.ndarray, p_adjusted: np.ndarray, alpha: float, correction: str | None
) -> np.ndarray:
    """The level gamma_i of each comparison's interval (1 - gamma_i, two-sided), chosen so that
    the interval excludes 0 exactly when the corrected p-value reads significant
    (``p_adjusted < alpha``): an interval and its reading never disagree. NaN where p is NaN.

    - ``holm``: the Holm step's level, alpha / (m - r + 1) for the r-th smallest p among the
      comparisons it rejects, and the first step it does not reject for the rest (the level the
      comparison was tested at; p_(r) < its level iff Holm rejects it);
    - ``none``: alpha;
    - ``bh``: k alpha / m, k the number Benjamini-Hochberg rejects (at least 1);
    - ``None`` (a family wider than the table, ``--family``): alpha p / p_adjusted, the level at
      which the comparison's own test meets its corrected p-value.
    """
    p = np.asarray(p, dtype=float)
    adj = np.asarray(p_adjusted, dtype=float)
    out = np.full_like(p, np.nan)
    ok = ~np.isnan(p)
    m = int(ok.sum())
    if m == 0:
        return out
    rejected = adj[ok] < alpha
    if correction == "none":
        out[ok] = alpha
    elif correction == "holm":
        order = np.argsort(p[ok], kind="stable")
        steps = alpha / (m - np.arange(m))  # level of the r-th smallest (r = 1..m)
        k = int(rejected.sum())  # Holm rejects exactly the k smallest
        levels = np.where(np.arange(m) < k, steps, steps[min(k, m - 1)])
        got = np.empty(m)
        got[order] = levels
        out[ok] = got
    elif correction == "bh":
        out[ok] = max(int(rejected.sum()), 1) * alpha / m
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            out[ok] = np.where(adj[ok] > 0, alpha * p[ok] / adj[ok], alpha)
    return out
