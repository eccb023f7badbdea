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
