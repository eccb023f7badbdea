"""Gap closure: how much of the baseline-reference gap an optimizer closes.

closure(X) = (m_B - m_X) / (m_B - m_R), with m the tuned mean over seeds of the baseline B (e.g.
SGD), the reference R (e.g. Adam) and X. 1 (100 %) means X matches R, 0 means X matches B; the
formula is the same whichever direction the metric improves. The interval is a percentile
bootstrap over the seeds of B, R and X, resampled independently (:mod:`harness.analysis.bootstrap`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from harness.analysis.bootstrap import CONFIDENCE, N_BOOT, interval, resampled_means
from harness.analysis.cells import iter_cells, with_keys
from harness.analysis.select import ARM
from harness.analysis.values import VALUE, std_or_nan

#: Output columns after the ``by`` columns.
COLUMNS = (ARM, "mean", "std", "n", "closure_pct", "ci_low_pct", "ci_high_pct", "note")


def closure(m_b: np.ndarray | float, m_x: np.ndarray | float, m_r: np.ndarray | float):
    """(m_b - m_x) / (m_b - m_r), elementwise; NaN where the gap is zero or undefined."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (np.asarray(m_b, float) - np.asarray(m_x, float)) / (
            np.asarray(m_b, float) - np.asarray(m_r, float)
        )
    return np.where(np.isinf(np.asarray(m_b, float) - np.asarray(m_r, float)), np.nan, out)


def gap_closure(
    seeds: pd.DataFrame,
    by: Sequence[str],
    baseline: str,
    reference: str,
    *,
    n_boot: int = N_BOOT,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> pd.DataFrame:
    """Gap closure of every arm in every cell, with a bootstrap interval.

    Args:
        seeds: one row per seed of each cell's tuned configuration: ``by`` columns, ``arm`` and
            ``value``.
        by: the cell columns.
        baseline: the arm label of B.
        reference: the arm label of R.
        n_boot: bootstrap resamples.
        confidence: two-sided level of the interval.
        seed: random seed of the resampling.

    Returns:
        One row per (cell, arm): ``by`` columns then :data:`COLUMNS`. Closures are in percent;
        B is 0 and R is 100 by definition (no interval). ``note`` says why a closure is
        missing.
    """
    rng = np.random.default_rng(seed)
    parts = []
    for key, cell in iter_cells(seeds, by):
        parts.append(with_keys(_cell(cell, baseline, reference, n_boot, confidence, rng), key))
    return pd.concat(parts, ignore_index=True)[[*by, *COLUMNS]]


def _cell(cell: pd.DataFrame, b: str, r: str, n_boot: int, conf: float, rng) -> pd.DataFrame:
    arms = {a: g[VALUE].to_numpy(float) for a, g in cell.groupby(ARM, sort=True)}
    order = [a for a in (b, r) if a in arms] + [a for a in arms if a not in (b, r)]
    missing = [name for name, a in (("baseline", b), ("reference", r)) if a not in arms]
    if not missing:
        boot_b = resampled_means(arms[b], n_boot, rng)
        boot_r = resampled_means(arms[r], n_boot, rng)
        m_b, m_r = arms[b].mean(), arms[r].mean()
    rows = []
    for a in order:
        v = arms[a]
        row = {ARM: a, "mean": v.mean(), "std": std_or_nan(v), "n": v.size, "note": ""}
        if missing:
            row.update(closure_pct=np.nan, ci_low_pct=np.nan, ci_high_pct=np.nan)
            row["note"] = f"no {' or '.join(missing)} in this cell"
        elif a in (b, r):
            row.update(closure_pct=0.0 if a == b else 100.0, ci_low_pct=np.nan, ci_high_pct=np.nan)
        else:
            c = float(closure(m_b, v.mean(), m_r))
            lo, hi = interval(closure(boot_b, resampled_means(v, n_boot, rng), boot_r), conf)
            row["note"] = _note(m_b, m_r, v)
            if min(v.size, arms[b].size, arms[r].size) < 2:
                lo, hi = np.nan, np.nan
                row["note"] = row["note"] or "n = 1: no interval"
            row.update(closure_pct=100 * c, ci_low_pct=100 * lo, ci_high_pct=100 * hi)
        rows.append(row)
    return pd.DataFrame(rows)


def _note(m_b: float, m_r: float, v: np.ndarray) -> str:
    if not np.isfinite([m_b, m_r]).all():
        return "baseline or reference diverged: closure undefined"
    if m_b == m_r:
        return "baseline equals reference: closure undefined"
    if not np.isfinite(v).all():
        return "diverged seed(s): worst possible closure"
    return ""
