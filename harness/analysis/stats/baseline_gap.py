"""Gap closure: how much of the baseline-reference gap an optimizer closes.

closure(X) = (m_B - m_X) / (m_B - m_R), with m the tuned mean over seeds of the baseline B (e.g.
SGD), the reference R (e.g. Adam) and X. 1 (100 %) means X matches R, 0 means X matches B; the
formula is the same whichever direction the metric improves.

The interval is Fieller's for a ratio of linear combinations of independent arm means
(:func:`harness.analysis.stats.intervals.ratio_interval`, t quantiles with Welch-Satterthwaite df):
at 3 seeds per arm it covers the true closure about 95 % of the time, where a percentile
bootstrap covers about 80 % (``docs/statistics.md``). When the gap B - R itself is not
significant the interval is unbounded (-inf, inf), and the note says so.

Each arm is also tested against the baseline and the reference (Welch's two-sided t test), the
p-values corrected over every test of the table (``correction``, Holm by default): ``vs_baseline``
and ``vs_reference`` say ``better`` or ``worse`` only when the corrected p is below ``alpha``,
else ``n.s.``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from harness.analysis.stats.cells import iter_cells, with_keys
from harness.analysis.stats.corrections import CORRECTIONS
from harness.analysis.stats.defaults import CONFIDENCE, Correction
from harness.analysis.stats.frame import ARM, VALUE, std_or_nan
from harness.analysis.stats.intervals import (
    METHODS,
    ONE_SEED,
    ZERO_VARIANCE,
    Values,
    ratio_interval,
)
from harness.analysis.stats.significance import TESTS
from harness.metrics.catalogue import Goal

#: Output columns after the ``by`` columns.
COLUMNS = (
    ARM,
    "mean",
    "std",
    "n",
    "closure_pct",
    "ci_low_pct",
    "ci_high_pct",
    "vs_baseline",
    "vs_reference",
    "p_baseline",
    "p_reference",
    "note",
)
#: The test behind ``vs_baseline`` and ``vs_reference``.
TEST = "welch"


def closure(m_b: np.ndarray | float, m_x: np.ndarray | float, m_r: np.ndarray | float):
    """(m_b - m_x) / (m_b - m_r), elementwise; NaN where the gap is zero or undefined."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (np.asarray(m_b, float) - np.asarray(m_x, float)) / (
            np.asarray(m_b, float) - np.asarray(m_r, float)
        )
    return np.where(np.isinf(np.asarray(m_b, float) - np.asarray(m_r, float)), np.nan, out)


def closure_interval(
    b: tuple[Values, Values, Values],
    x: tuple[Values, Values, Values],
    r: tuple[Values, Values, Values],
    confidence: float = CONFIDENCE,
) -> tuple[np.ndarray, np.ndarray]:
    """Fieller's interval of the closure from (mean, seed variance, n) of B, X and R (arrays
    broadcast: the coverage simulation passes thousands of draws at once)."""
    parts = [
        (1.0, 1.0, b[1] / b[2], b[2] - 1.0),  # m_B: +1 in the numerator and the denominator
        (-1.0, 0.0, x[1] / x[2], x[2] - 1.0),
        (0.0, -1.0, r[1] / r[2], r[2] - 1.0),
    ]
    return ratio_interval(b[0] - x[0], b[0] - r[0], parts, confidence)


def gap_closure(
    seeds: pd.DataFrame,
    by: Sequence[str],
    baseline: str,
    reference: str,
    *,
    confidence: float = CONFIDENCE,
    goal: Goal = Goal.MIN,
    alpha: float = 0.05,
    correction: Correction = "holm",
) -> pd.DataFrame:
    """Gap closure of every arm in every cell, with Fieller's interval and tests against B and R.

    Args:
        seeds: one row per seed of each cell's tuned configuration: ``by`` columns, ``arm`` and
            ``value``.
        by: the cell columns.
        baseline: the arm label of B.
        reference: the arm label of R.
        confidence: two-sided level of the interval.
        goal: ``min`` or ``max``: which direction is ``better`` in ``vs_baseline``/``vs_reference``.
        alpha: significance level of those tests.
        correction: a name in :data:`~harness.analysis.stats.corrections.CORRECTIONS`, applied over
            every test of the table.

    Returns:
        One row per (cell, arm): ``by`` columns then :data:`COLUMNS`. Closures are in percent;
        B is 0 and R is 100 by definition (no interval). ``note`` says why a closure or its
        interval is missing or unbounded.
    """
    parts = [
        with_keys(_cell(cell, baseline, reference, confidence), key)
        for key, cell in iter_cells(seeds, by)
    ]
    out = pd.concat(parts, ignore_index=True)
    n_tests = _significance(out, seeds, by, baseline, reference, goal, alpha, correction)
    table = out[[*by, *COLUMNS]]
    table.attrs["n_tests"] = n_tests  # the correction's family size (each pair tested once)
    return table


def _cell(cell: pd.DataFrame, b: str, r: str, conf: float) -> pd.DataFrame:
    arms = {a: g[VALUE].to_numpy(float) for a, g in cell.groupby(ARM, sort=True)}
    order = [a for a in (b, r) if a in arms] + [a for a in arms if a not in (b, r)]
    missing = [name for name, a in (("baseline", b), ("reference", r)) if a not in arms]
    rows = []
    for a in order:
        v = arms[a]
        row = {ARM: a, "mean": v.mean(), "std": std_or_nan(v), "n": v.size, "note": ""}
        row.update(closure_pct=np.nan, ci_low_pct=np.nan, ci_high_pct=np.nan)
        if missing:
            row["note"] = f"no {' or '.join(missing)} in this cell"
        elif a in (b, r):
            row["closure_pct"] = 0.0 if a == b else 100.0
        else:
            row.update(_closure_row(arms[b], v, arms[r], conf))
        rows.append(row)
    return pd.DataFrame(rows)


def _closure_row(vb: np.ndarray, vx: np.ndarray, vr: np.ndarray, conf: float) -> dict:
    c = float(closure(vb.mean(), vx.mean(), vr.mean()))
    row = {"closure_pct": 100 * c, "note": _note(vb.mean(), vr.mean(), vx)}
    if row["note"]:
        return row
    if min(vx.size, vb.size, vr.size) < 2:
        return row | {"note": ONE_SEED}
    if max(np.ptp(vb), np.ptp(vx), np.ptp(vr)) == 0:
        return row | {"note": ZERO_VARIANCE}

    def summary(v: np.ndarray) -> tuple[Values, Values, Values]:
        return float(v.mean()), float(v.var(ddof=1)), float(v.size)

    lo, hi = closure_interval(summary(vb), summary(vx), summary(vr), confidence=conf)
    row |= {"ci_low_pct": 100 * float(lo), "ci_high_pct": 100 * float(hi)}
    if not np.isfinite([lo, hi]).all():
        row["note"] = "gap not significant: closure interval unbounded (Fieller)"
    return row


def _note(m_b: float, m_r: float, v: np.ndarray) -> str:
    if not np.isfinite([m_b, m_r]).all():
        return "baseline or reference diverged: closure undefined"
    if m_b == m_r:
        return "baseline equals reference: closure undefined"
    if not np.isfinite(v).all():
        return "diverged seed(s): worst possible closure"
    return ""


def _significance(
    out: pd.DataFrame,
    seeds: pd.DataFrame,
    by: Sequence[str],
    b: str,
    r: str,
    goal: Goal,
    alpha: float,
    correction: str,
) -> int:
    """Fill vs_baseline/vs_reference and their corrected p-values, in place; returns the number
    of tests corrected over (baseline vs reference, on two rows, is one test)."""
    values = {
        (tuple(key.values()), str(a)): g[VALUE].to_numpy(float)
        for key, cell in iter_cells(seeds, by)
        for a, g in cell.groupby(ARM, sort=True)
    }
    tests = []  # (row index, column, index into ps, sign of mean(arm) - mean(other))
    ps: list[float] = []
    pairs: dict[tuple, int] = {}  # one test per unordered pair of arms in a cell
    for i, row in out.iterrows():
        cell = tuple(row[k] for k in by)
        mine = values.get((cell, str(row[ARM])))
        for col, other in (("baseline", b), ("reference", r)):
            theirs = values.get((cell, other))
            if row[ARM] == other or mine is None or theirs is None:
                continue
            if min(mine.size, theirs.size) < 2 or not np.isfinite([*mine, *theirs]).all():
                continue
            if np.ptp(mine) == 0 and np.ptp(theirs) == 0:  # no seed noise: nothing to test
                continue
            pair = (cell, frozenset((str(row[ARM]), other)))
            if pair not in pairs:  # baseline vs reference appears on two rows: tested once
                pairs[pair] = len(ps)
                ps.append(TESTS[TEST].run(theirs, mine, "two-sided", alpha).p)
            tests.append((i, col, pairs[pair], np.sign(mine.mean() - theirs.mean())))
    out["vs_baseline"], out["vs_reference"] = "-", "-"
    out["p_baseline"], out["p_reference"] = np.nan, np.nan
    if not tests:
        return 0
    p_adj = CORRECTIONS[correction](np.array(ps, float))
    for i, col, k, sign in tests:
        p = p_adj[k]
        out.loc[i, f"p_{col}"] = p
        better = sign < 0 if goal == "min" else sign > 0
        out.loc[i, f"vs_{col}"] = "n.s." if not p < alpha else ("better" if better else "worse")
    return len(ps)


def notes(confidence: float, alpha: float, correction: str, n_tests: int) -> list[str]:
    """The notes naming the gap table's methods."""
    return [
        f"closure interval: {METHODS['ratio']}, {100 * confidence:g}%",
        f"vs_baseline / vs_reference: {TEST} two-sided t test, {correction} correction over "
        f"the {n_tests} test(s) of this table, alpha {alpha:g}; n.s.: not significant",
    ]
