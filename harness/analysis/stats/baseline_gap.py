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
from typing import Any

import numpy as np
import pandas as pd

from harness.analysis.stats.cells import iter_cells, with_keys
from harness.analysis.stats.corrections import CORRECTIONS, Adjust
from harness.analysis.stats.defaults import CONFIDENCE, Correction, TestName
from harness.analysis.stats.frame import ARM, VALUE, std_or_nan
from harness.analysis.stats.intervals import (
    METHODS,
    ONE_SEED,
    ZERO_VARIANCE,
    Values,
    ratio_interval,
    welch_p_value,
)
from harness.analysis.stats.pooled import pooled_by
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
TEST: TestName = "welch"

#: A bounded closure interval is flagged (:func:`small_gap`) at most this many seeds in an arm...
SMALL_GAP_SEEDS = 3
#: ...at 3 seeds when the gap's t statistic is below this (at 2 seeds always). Given that it is
#: bounded, the interval covers 85-94 % at 2 seeds for a true gap of 1-4 seed sd, whatever the
#: observed t; 92-94 % at 3 seeds for a gap of 1-2 sd, of which flagging t < 4 leaves 96 %
#: covered or flagged; 93-96 % from 4 seeds (``docs/statistics.md``, 60,000 experiments each).
SMALL_GAP_T = 4.0


def small_gap(t_gap: Values, n_min: Values) -> np.ndarray:
    """Whether a bounded closure interval is flagged: it may cover less than its level because
    the gap is small for the seeds (see :data:`SMALL_GAP_T`; arrays broadcast).

    Args:
        t_gap: the baseline-reference gap over its standard error (Welch's t statistic).
        n_min: the fewest seeds of the baseline, the arm and the reference.
    """
    n = np.asarray(n_min, float)
    t = np.abs(np.asarray(t_gap, float))
    return np.asarray((n < SMALL_GAP_SEEDS) | ((n == SMALL_GAP_SEEDS) & (t < SMALL_GAP_T)), bool)


def small_gap_note(t_gap: float, n_min: int) -> str:
    """The note beside a bounded closure interval that :func:`small_gap` flags ('' if none)."""
    if not small_gap(t_gap, n_min):
        return ""
    why = (
        f"{n_min} seed(s)"
        if n_min < SMALL_GAP_SEEDS
        else f"small gap for {n_min} seeds (gap t = {abs(t_gap):.3g} < {SMALL_GAP_T:g})"
    )
    return (
        f"{why}: a bounded closure interval may cover less than its level (85-94 % measured "
        "at a true gap of 1-4 seed sd; add seeds)"
    )


def gap_t(b: tuple[Values, ...], r: tuple[Values, ...]) -> np.ndarray:
    """The gap's t statistic (m_B - m_R) / sqrt(s_B^2 / n_B + s_R^2 / n_R) from (mean, seed
    variance, n) of B and R."""
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = np.asarray(b[0], float) - np.asarray(r[0], float)
        se = np.sqrt(
            np.asarray(b[1], float) / np.asarray(b[2], float)
            + np.asarray(r[1], float) / np.asarray(r[2], float)
        )
        return np.asarray(gap / se, float)


def closure(
    m_b: np.ndarray | float, m_x: np.ndarray | float, m_r: np.ndarray | float
) -> np.ndarray:
    """(m_b - m_x) / (m_b - m_r), elementwise; NaN where the gap is zero or undefined."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (np.asarray(m_b, float) - np.asarray(m_x, float)) / (
            np.asarray(m_b, float) - np.asarray(m_r, float)
        )
    return np.where(np.isinf(np.asarray(m_b, float) - np.asarray(m_r, float)), np.nan, out)


def closure_interval(
    b: tuple[Values, ...],
    x: tuple[Values, ...],
    r: tuple[Values, ...],
    confidence: float = CONFIDENCE,
) -> tuple[np.ndarray, np.ndarray]:
    """Fieller's interval of the closure from (mean, seed variance, n) of B, X and R, each
    optionally with a fourth element, the variance's df (default n - 1; a pooled variance has
    more). Arrays broadcast: the coverage simulation passes thousands of draws at once."""

    def df(arm: tuple[Values, ...]) -> Values:
        return arm[3] if len(arm) > 3 else np.asarray(arm[2], float) - 1.0

    parts = [
        (1.0, 1.0, b[1] / b[2], df(b)),  # m_B: +1 in the numerator and the denominator
        (-1.0, 0.0, x[1] / x[2], df(x)),
        (0.0, -1.0, r[1] / r[2], df(r)),
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
    pooled_variance: bool = False,
    adjust: Adjust | None = None,
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
        pooled_variance: each arm's seed variance pooled over the cells
            (:mod:`~harness.analysis.stats.pooled`), in the intervals and the tests.
        adjust: corrects the p-values over a wider family instead (``--family``); a test's
            claim key is its cell and pair of arms (``batch_size=8: adam vs sgd``).

    Returns:
        One row per (cell, arm): ``by`` columns then :data:`COLUMNS`. Closures are in percent;
        B is 0 and R is 100 by definition (no interval). ``note`` says why a closure or its
        interval is missing or unbounded.
    """
    pooled = pooled_by(seeds, by, [ARM]) if pooled_variance else None
    parts = [
        with_keys(_cell(cell, baseline, reference, confidence, pooled), key)
        for key, cell in iter_cells(seeds, by)
    ]
    out = pd.concat(parts, ignore_index=True)
    n_tests = _significance(
        out, seeds, by, baseline, reference, goal, alpha, adjust or _by_name(correction), pooled
    )
    table = out[[*by, *COLUMNS]]
    table.attrs["n_tests"] = n_tests  # the correction's family size (each pair tested once)
    return table


#: {arm: (pooled seed variance, df)} (``--pooled-variance``), or None: each cell's own.
Pooled = dict[tuple[object, ...], tuple[float, float]] | None


def _cell(cell: pd.DataFrame, b: str, r: str, conf: float, pooled: Pooled) -> pd.DataFrame:
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
            names = (b, a, r)
            stats_ = [_summary(arms[k], None if pooled is None else pooled[(k,)]) for k in names]
            row.update(_closure_row(arms[b], v, arms[r], conf, stats_))
        rows.append(row)
    return pd.DataFrame(rows)


def _summary(v: np.ndarray, pooled: tuple[float, float] | None) -> tuple[float, ...]:
    """(mean, seed variance, n, df) of an arm's seeds, the variance pooled when given."""
    if pooled is None:
        return float(v.mean()), float(v.var(ddof=1)) if v.size > 1 else np.nan, v.size, v.size - 1.0
    return float(v.mean()), pooled[0], float(v.size), pooled[1]


def _closure_row(
    vb: np.ndarray, vx: np.ndarray, vr: np.ndarray, conf: float, arms: list[tuple[float, ...]]
) -> dict[str, object]:
    c = float(closure(vb.mean(), vx.mean(), vr.mean()))
    row = {"closure_pct": 100 * c, "note": _note(vb.mean(), vr.mean(), vx)}
    if row["note"]:
        return row
    if min(vx.size, vb.size, vr.size) < 2:
        return row | {"note": ONE_SEED}
    if max(np.ptp(vb), np.ptp(vx), np.ptp(vr)) == 0:
        return row | {"note": ZERO_VARIANCE}
    b, x, r = arms
    lo, hi = closure_interval(b, x, r, confidence=conf)
    row |= {"ci_low_pct": 100 * float(lo), "ci_high_pct": 100 * float(hi)}
    if not np.isfinite([lo, hi]).all():
        row["note"] = "gap not significant: closure interval unbounded (Fieller)"
    else:
        row["note"] = small_gap_note(float(gap_t(b, r)), min(vb.size, vx.size, vr.size))
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
    adjust: Adjust,
    pooled: Pooled = None,
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
    pairs: dict[tuple[Any, ...], int] = {}  # one test per unordered pair of arms in a cell
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
                ps.append(_test(theirs, mine, other, str(row[ARM]), alpha, pooled))
            tests.append((i, col, pairs[pair], np.sign(mine.mean() - theirs.mean())))
    out["vs_baseline"], out["vs_reference"] = "-", "-"
    out["p_baseline"], out["p_reference"] = np.nan, np.nan
    if not tests:
        return 0
    keys = [
        f"{', '.join(f'{k}={v}' for k, v in zip(by, cell, strict=True)) or 'all'}: "
        f"{' vs '.join(sorted(arms))}"
        for (cell, arms), _ in sorted(pairs.items(), key=lambda kv: kv[1])
    ]
    p_adj = adjust(np.array(ps, float), keys)
    for i, col, k, sign in tests:
        p = p_adj[k]
        out.loc[i, f"p_{col}"] = p
        better = sign < 0 if goal == "min" else sign > 0
        out.loc[i, f"vs_{col}"] = "n.s." if not p < alpha else ("better" if better else "worse")
    return len(ps)


def _by_name(correction: str) -> Adjust:
    """The table's own correction as an :data:`Adjust` (claim keys unused)."""
    return lambda p, keys: CORRECTIONS[correction](p)


def _test(
    theirs: np.ndarray, mine: np.ndarray, other: str, arm: str, alpha: float, pooled: Pooled
) -> float:
    """The two-sided p-value of mine against theirs: Welch's (Banerjee's at unequal n), on each
    arm's pooled variance when given."""
    if pooled is None:
        return TESTS[TEST].run(theirs, mine, "two-sided", alpha).p
    (va, da), (vm, dm) = pooled[(other,)], pooled[(arm,)]
    weights = [va / theirs.size, vm / mine.size]
    return welch_p_value(float(mine.mean() - theirs.mean()), weights, [da, dm], "two-sided")


def notes(confidence: float, alpha: float, correction: Correction, n_tests: int) -> list[str]:
    """The notes naming the gap table's methods."""
    return [
        f"closure interval: {METHODS['ratio']}, {100 * confidence:g}%",
        f"vs_baseline / vs_reference: {TEST} two-sided t test, {correction} correction over "
        f"the {n_tests} test(s) of this table, alpha {alpha:g}; n.s.: not significant",
    ]
