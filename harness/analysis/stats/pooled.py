"""Seed variance pooled over cells (``--pooled-variance``): more degrees of freedom per interval.

At 3 seeds each cell's interval rests on its own 2 degrees of freedom (t = 4.30 at 95 %). When
the seed noise is the same in every cell of a table (the same optimizer at several batch sizes,
say), the within-cell variances estimate one variance, and pooling them,
``s_p^2 = sum (n_i - 1) s_i^2 / sum (n_i - 1)`` with ``df = sum (n_i - 1)``, gives every cell
an interval on that many degrees of freedom (t = 2.31 at 4 cells of 3 seeds): the residual
variance of a model with one mean per cell. Each arm keeps its own pooled variance (optimizers
differ in noise); the arms are then compared as usual (Welch, or Banerjee where the pooled dfs
differ).

What it does not cover: cells whose noise differs. A cell noisier than the pool gets too
narrow an interval (``docs/statistics.md``: the noisiest of 4 cells with sd 0.5..2 covers
far below 95 %), and a quiet one too wide. Pool only cells that differ in a condition that
does not change the seed noise, and never across optimizers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from harness.analysis.stats.cells import groups, iter_cells
from harness.analysis.stats.frame import VALUE
from harness.analysis.stats.intervals import t_quantile

#: The note of a table whose intervals use the pooled variance.
NOTE = (
    "--pooled-variance: each arm's seed variance pooled over the cells (df = sum of n - 1); "
    "valid only if the seed noise is the same in every cell"
)


def pool(
    variances: np.ndarray, counts: np.ndarray, axis: int = -1
) -> tuple[np.ndarray, np.ndarray]:
    """(pooled variance, its df) of cells' seed variances and seed counts along ``axis``.

    Cells with fewer than 2 seeds or a non-finite variance add nothing. Arrays: the coverage
    simulation pools thousands of experiments at once.
    """
    v, n = np.broadcast_arrays(np.asarray(variances, float), np.asarray(counts, float))
    use = (n >= 2) & np.isfinite(v)
    df = np.where(use, n - 1.0, 0.0).sum(axis=axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        var = np.where(use, (n - 1.0) * v, 0.0).sum(axis=axis) / df
    return np.where(df > 0, var, np.nan), df


def pooled_by(
    seeds: pd.DataFrame, by: Sequence[str], within: Sequence[str]
) -> dict[tuple[Any, ...], tuple[float, float]]:
    """Per group of ``within`` (e.g. the arm; empty: one group, key ``()``), the seed variance
    pooled over the cells of ``by`` and its df: ``{key: (pooled variance, df)}``."""
    cells = [c for c in by if c not in within]
    out = {}
    for key, rows in iter_cells(seeds, list(within)):
        g = groups(rows, cells)[VALUE]
        var, df = pool(g.var(ddof=1).to_numpy(float), g.size().to_numpy(float))
        out[tuple(key.values())] = (float(var), float(df))
    return out


def mean_intervals(
    table: pd.DataFrame,
    seeds: pd.DataFrame,
    by: Sequence[str],
    within: Sequence[str],
    confidence: float,
) -> pd.DataFrame:
    """``table`` (one row per cell with ``mean`` and ``n``) with ``ci_low``/``ci_high`` the
    Student t intervals on the pooled variance of :func:`pooled_by` (NaN where it is)."""
    pooled = pooled_by(seeds, by, within)
    rows = table[list(within)].itertuples(index=False, name=None)
    keys = list(rows) if within else [()] * len(table)
    var, df = (np.array([pooled.get(k, (np.nan, 0.0))[i] for k in keys]) for i in (0, 1))
    half = t_quantile(confidence, df) * np.sqrt(var / table["n"].to_numpy(float))
    out = table.copy()
    out["ci_low"], out["ci_high"] = out["mean"] - half, out["mean"] + half
    return out
