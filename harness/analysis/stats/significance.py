"""Is arm b better than arm a? Per cell: means, stds, n, difference, test, significance.

The difference is d = mean_b - mean_a. ``alternative`` states the hypothesis about b: ``less``
(b is lower, e.g. a better perplexity), ``greater``, or ``two-sided``.

``paper`` is App. F of the Coupled Adam paper exactly: S seeds per arm, sigma_d =
sqrt(s_a^2 + s_b^2) (corrected stds), threshold t_(alpha, S-1) * sigma_d / sqrt(S) with the
one-sided t quantile, significant if d < -threshold (``less``) or d > threshold (``greater``).
Its p-value is that of the statistic d / (sigma_d / sqrt(S)) under t with S - 1 degrees of
freedom, so ``p < alpha`` is the same decision as the threshold. The other tests are scipy.stats:
``welch`` (ttest_ind, unequal variances; with unequal seed counts Banerjee's test, whose
interval is the one reported: Welch's df under-covers there), ``student`` (pooled),
``paired`` (ttest_rel over the seeds both arms ran) and ``mannwhitney`` (mannwhitneyu).
Corrections adjust the p-values over all cells of one call (Holm by default); significance
is ``p_adj < alpha``.

``auto`` (the default) is the comparison ``harness bench`` reads its verdict with
(:mod:`~harness.analysis.stats.two_arm`): paired by seed where both arms ran the same seeds,
Welch (Banerjee) otherwise, zero spread no test, diverged seeds by Fisher's exact test; the
``method`` column says which.

``ci_low``/``ci_high`` bound the difference: Welch's t interval (Banerjee's with unequal seed
counts; paired: the t interval of the per-seed differences), at the level of the reading
(:func:`~harness.analysis.stats.corrections.reading_levels`: for Holm, 1 - the step's level
alpha / (m - r + 1); with no correction 1 - alpha), so that it excludes 0 exactly where the
corrected p reads significant (for the t tests; a one-sided test's two-sided interval is at
1 - 2 gamma).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd
from scipy import stats

from harness.analysis.stats import banerjee
from harness.analysis.stats.cells import iter_cells
from harness.analysis.stats.corrections import CORRECTIONS, Adjust, reading_levels
from harness.analysis.stats.defaults import ALTERNATIVES as ALTERNATIVE_CHOICES
from harness.analysis.stats.defaults import Alternative, Correction, TestName
from harness.analysis.stats.frame import ARM, VALUE, std_or_nan
from harness.analysis.stats.intervals import (
    ZERO_VARIANCE,
    unequal_counts,
    welch_p_value,
)
from harness.analysis.stats.pooled import pooled_by
from harness.analysis.stats.sequential import SequentialDesign
from harness.analysis.stats.staged_compare import staged_compare
from harness.analysis.stats.two_arm import Method, TwoArmTest, two_arm_test
from harness.core.errors import UserError, unknown_choice

ALTERNATIVES = ALTERNATIVE_CHOICES


@dataclass(frozen=True, slots=True)
class SignificanceResult:
    """The result of one test in one cell."""

    statistic: float
    """Test statistic (t, or U for Mann-Whitney)."""
    p: float
    """p-value under the chosen alternative."""
    threshold: float = float("nan")
    """``paper`` only: the one-sided significance threshold d_significance."""


def paper_test(
    a: np.ndarray, b: np.ndarray, alternative: Alternative, alpha: float
) -> SignificanceResult:
    """App. F of the Coupled Adam paper (see the module docstring); len(a) == len(b) == S."""
    s = a.size
    assert s == b.size and s >= 2
    d = b.mean() - a.mean()
    sigma_d = np.sqrt(a.var(ddof=1) + b.var(ddof=1))
    threshold = stats.t.ppf(1 - alpha, s - 1) * sigma_d / np.sqrt(s)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = d / (sigma_d / np.sqrt(s))
    p = stats.t.cdf(t, s - 1) if alternative == "less" else stats.t.sf(t, s - 1)
    return SignificanceResult(statistic=float(t), p=float(p), threshold=float(threshold))


def _welch(a: np.ndarray, b: np.ndarray, alt: Alternative, alpha: float) -> SignificanceResult:
    r = stats.ttest_ind(b, a, equal_var=False, alternative=alt)
    if not unequal_counts(a.size, b.size):
        return SignificanceResult(statistic=float(r.statistic), p=float(r.pvalue))
    weights = [a.var(ddof=1) / a.size, b.var(ddof=1) / b.size]
    p = banerjee.p_value(float(r.statistic), weights, [a.size - 1.0, b.size - 1.0], alt)
    return SignificanceResult(statistic=float(r.statistic), p=p)


def _student(a: np.ndarray, b: np.ndarray, alt: Alternative, alpha: float) -> SignificanceResult:
    r = stats.ttest_ind(b, a, equal_var=True, alternative=alt)
    return SignificanceResult(statistic=float(r.statistic), p=float(r.pvalue))


def _paired(a: np.ndarray, b: np.ndarray, alt: Alternative, alpha: float) -> SignificanceResult:
    r = stats.ttest_rel(b, a, alternative=alt)
    return SignificanceResult(statistic=float(r.statistic), p=float(r.pvalue))


def _mannwhitney(
    a: np.ndarray, b: np.ndarray, alt: Alternative, alpha: float
) -> SignificanceResult:
    r = stats.mannwhitneyu(b, a, alternative=alt)
    return SignificanceResult(statistic=float(r.statistic), p=float(r.pvalue))


@dataclass(frozen=True, slots=True)
class SignificanceTest:
    """A registered test."""

    run: Callable[[np.ndarray, np.ndarray, Alternative, float], SignificanceResult]
    """(a values, b values, alternative, alpha) -> outcome."""
    paired: bool = False
    """Pairs a and b by seed."""
    finite_only: bool = True
    """Undefined with an infinite (diverged) value; rank tests are not."""
    one_sided_only: bool = False
    """Only ``less`` and ``greater`` make sense."""


#: ``--test`` name -> test (``auto``: :mod:`~harness.analysis.stats.two_arm`, run by
#: :func:`compare` itself).
TESTS: dict[TestName, SignificanceTest] = {
    "auto": SignificanceTest(run=_welch, finite_only=False),
    "paper": SignificanceTest(run=paper_test, one_sided_only=True),
    "welch": SignificanceTest(run=_welch),
    "student": SignificanceTest(run=_student),
    "paired": SignificanceTest(run=_paired, paired=True),
    "mannwhitney": SignificanceTest(run=_mannwhitney, finite_only=False),
}

#: Fewest seeds per arm (pairs for ``paired``) any test accepts.
MIN_SEEDS = 2


def check_choices(test: str, alternative: str, correction: str, alpha: float) -> None:
    """Validate the test options.

    Raises:
        UserError: an unknown choice, alpha outside (0, 1), or a two-sided ``paper`` test.
    """
    if test not in TESTS:
        raise unknown_choice("--test", test, TESTS)
    if alternative not in ALTERNATIVES:
        raise unknown_choice("--alternative", alternative, ALTERNATIVES)
    if correction not in CORRECTIONS:
        raise unknown_choice("--correction", correction, CORRECTIONS)
    if not 0 < alpha < 1:
        raise UserError(f"--alpha must be in (0, 1), got {alpha}")
    if TESTS[test].one_sided_only and alternative == "two-sided":
        raise UserError("--test paper is one-sided: use --alternative less or greater")


def compare(
    seeds: pd.DataFrame,
    by: Sequence[str],
    a: str,
    b: str,
    *,
    test: TestName = "auto",
    alternative: Alternative = "less",
    alpha: float = 0.05,
    correction: Correction = "holm",
    pooled_variance: bool = False,
    adjust: Adjust | None = None,
    stages: SequentialDesign | None = None,
) -> pd.DataFrame:
    """Test b against a in each cell.

    Args:
        seeds: one row per seed of each cell's tuned configuration: ``by``, ``arm``, ``seed``,
            ``value``.
        by: cell columns.
        a: label of arm a.
        b: label of arm b.
        test: a name in :data:`TESTS`; ``auto`` is the bench's comparison
            (:mod:`~harness.analysis.stats.two_arm`: paired by seed where both arms ran the
            same seeds, Welch or Banerjee otherwise, diverged seeds by Fisher's exact test).
        alternative: ``less``, ``greater`` or ``two-sided`` (about b relative to a).
        alpha: significance level.
        correction: a name in :data:`~harness.analysis.stats.corrections.CORRECTIONS`.
        pooled_variance: each arm's seed variance pooled over the cells
            (:mod:`~harness.analysis.stats.pooled`; ``welch`` only).
        adjust: corrects the p-values over a wider family instead (``--family``); each cell's
            claim key is its ``by`` values (``batch_size=8``; ``all`` without ``by``).
        stages: read the cells as ``harness bench`` does with sequential confirmation seeds
            (:func:`~harness.analysis.stats.staged_compare.staged_compare`; ``auto``,
            two-sided, Holm, no pooled variance or family).

    Returns:
        One row per cell: ``by``, mean_a, std_a, n_a, mean_b, std_b, n_b, diff (b - a),
        ci_low, ci_high (of diff, at the level of the reading:
        :func:`~harness.analysis.stats.corrections.reading_levels`), statistic, p, threshold
        (``paper``), p_adj, significant (yes/no/n/a), method, note; with ``stages``, stage.

    Raises:
        UserError: an arm has fewer than 2 seeds in a cell (or fewer than 2 shared seeds for
            ``paired``), or ``paper`` gets unequal seed counts.
    """
    check_choices(test, alternative, correction, alpha)
    if pooled_variance and test not in ("welch", "auto"):
        raise UserError(f"--pooled-variance needs --test welch, got --test {test}")
    if stages is not None:
        _check_staged(test, alternative, correction, pooled_variance, adjust)
        return staged_compare(seeds, by, a, b, stages, alpha=alpha)
    spec = TESTS[test]
    pooled = pooled_by(seeds, by, [ARM]) if pooled_variance else None
    rows = [
        _cell(cell, key, a, b, test, spec, alternative, alpha, pooled)
        for key, cell in iter_cells(seeds, by)
    ]
    tests: list[TwoArmTest | None] = [cast("TwoArmTest | None", r.pop("_test")) for r in rows]
    out = pd.DataFrame(rows)
    p = out["p"].to_numpy(float)
    keys = [_describe(key).strip(" ()") or "all" for key, _ in iter_cells(seeds, by)]
    out["p_adj"] = adjust(p, keys) if adjust else CORRECTIONS[correction](p)
    levels = reading_levels(p, out["p_adj"].to_numpy(float), alpha, None if adjust else correction)
    two_sided = alternative == "two-sided"
    lows = out["ci_low"].to_numpy(float, copy=True)
    highs = out["ci_high"].to_numpy(float, copy=True)
    for i, (t, gamma) in enumerate(zip(tests, levels, strict=True)):
        if t is not None and not np.isnan(gamma):  # the interval at the reading's level
            conf = 1.0 - float(gamma if two_sided else 2.0 * gamma)
            lows[i], highs[i] = t.interval(conf)
    out["ci_low"], out["ci_high"] = lows, highs
    out["significant"] = [
        "n/a" if np.isnan(p) else ("yes" if p < alpha else "no") for p in out["p_adj"]
    ]
    cols = ["mean_a", "std_a", "n_a", "mean_b", "std_b", "n_b", "diff", "ci_low", "ci_high"]
    cols += ["statistic", "p"]
    return out[[*by, *cols, "threshold", "p_adj", "significant", "method", "note"]]


def _check_staged(
    test: TestName,
    alternative: Alternative,
    correction: Correction,
    pooled_variance: bool,
    adjust: Adjust | None,
) -> None:
    """``--stages`` reads as the bench: ``--test auto``, two-sided, Holm, per table."""
    given = {
        "--test": (test, "auto"),
        "--alternative": (alternative, "two-sided"),
        "--correction": (correction, "holm"),
    }
    for flag, (value, needed) in given.items():
        if value != needed:
            raise UserError(f"--stages reads as harness bench does: {flag} {needed}, got {value}")
    if pooled_variance or adjust is not None:
        raise UserError(
            "--stages reads each table as its own family: no --pooled-variance or --family"
        )


def _summary(va: np.ndarray, vb: np.ndarray, note: str) -> dict[str, object]:
    return {
        "mean_a": _mean(va),
        "std_a": std_or_nan(va),
        "n_a": va.size,
        "mean_b": _mean(vb),
        "std_b": std_or_nan(vb),
        "n_b": vb.size,
        "diff": _mean(vb) - _mean(va),
        "ci_low": np.nan,
        "ci_high": np.nan,
        "statistic": np.nan,
        "p": np.nan,
        "threshold": np.nan,
        "method": "",
        "note": note,
        "_test": None,
    }


def _check_seeds(
    test: TestName, spec: SignificanceTest, arms: dict[str, np.ndarray], where: str
) -> None:
    what = "shared seeds" if spec.paired else "seeds"
    for label, v in arms.items():
        if v.size < MIN_SEEDS:
            raise UserError(
                f"--test {test} needs at least {MIN_SEEDS} {what} per arm; "
                f"{label}{where} has {v.size}"
            )
    sizes = {v.size for v in arms.values()}
    if test == "paper" and len(sizes) > 1:
        counts = ", ".join(f"{k}: {v.size}" for k, v in arms.items())
        raise UserError(
            "--test paper needs the same number of seeds in both arms; "
            f"{where.strip(' ()') or 'the cell'} has {counts} (use --test welch)"
        )


def _cell(
    cell: pd.DataFrame,
    key: dict[str, Any],
    a: str,
    b: str,
    test: TestName,
    spec: SignificanceTest,
    alternative: Alternative,
    alpha: float,
    pooled: dict[tuple[Any, ...], tuple[float, float]] | None,
) -> dict[str, object]:
    va, vb, note = _arm_values(cell, key, a, b, spec.paired)
    absent = [label for label in (a, b) if not (cell[ARM] == label).any()]
    if absent:
        return dict(key) | _summary(va, vb, f"no runs of {' or '.join(absent)} in this cell")
    _check_seeds(test, spec, {a: va, b: vb}, _describe(key))
    row = dict(key) | _summary(va, vb, note)
    if test == "auto":  # the bench's comparison, as it is
        sa, sb = (cell[cell[ARM] == x]["seed"].to_numpy() for x in (a, b))
        if pooled is None or not (np.isfinite(va).all() and np.isfinite(vb).all()):
            t = two_arm_test(va, vb, seeds_a=sa, seeds_b=sb, alternative=alternative)
            return row | _of_test(t)
        spec = TESTS["welch"]  # pooled variances: Welch's test on them
    seeds = np.arange(va.size) if spec.paired else None  # paired: va, vb are aligned
    t = two_arm_test(va, vb, seeds_a=seeds, seeds_b=seeds, alternative=alternative)
    row |= {"method": t.method, "_test": t}
    if spec.finite_only and not (np.isfinite(va).all() and np.isfinite(vb).all()):
        note = "diverged seed(s): test undefined (try --test auto or mannwhitney)"
        return row | {"method": "", "note": note, "_test": None}
    spread = np.ptp(vb - va) if spec.paired else max(np.ptp(va), np.ptp(vb))
    if spec.finite_only and spread == 0:  # a zero-width interval and p = 0 from no noise
        return row | {"note": ZERO_VARIANCE, "_test": None}
    if pooled is not None:
        return row | _pooled_test(va, vb, pooled[(a,)], pooled[(b,)], alternative)
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        res = spec.run(va, vb, alternative, alpha)
    return row | {"statistic": res.statistic, "p": res.p, "threshold": res.threshold}


def _of_test(t: TwoArmTest) -> dict[str, object]:
    """A row's test columns from the two-arm comparison."""
    note = t.note
    return {"statistic": t.statistic, "p": t.p, "method": t.method, "note": note, "_test": t}


def _pooled_test(
    va: np.ndarray,
    vb: np.ndarray,
    pool_a: tuple[float, float],
    pool_b: tuple[float, float],
    alternative: Alternative,
) -> dict[str, object]:
    """Welch-type test of mean(b) - mean(a) on each arm's pooled (variance, df); its interval
    is drawn at the reading's level by :func:`compare`."""
    d = float(vb.mean() - va.mean())
    weights = (pool_a[0] / va.size, pool_b[0] / vb.size)
    dfs = (pool_a[1], pool_b[1])
    p = welch_p_value(d, list(weights), list(dfs), alternative)
    stat = d / float(np.sqrt(sum(weights)))
    method: Method = "welch" if dfs[0] == dfs[1] else "banerjee"
    t = TwoArmTest(d, stat, p, va.size, vb.size, method, "", weights, dfs)
    return {"statistic": stat, "p": p, "method": f"{method} (pooled variance)", "_test": t}


def _arm_values(
    cell: pd.DataFrame, key: dict[str, Any], a: str, b: str, paired: bool
) -> tuple[np.ndarray, np.ndarray, str]:
    va = cell[cell[ARM] == a]
    vb = cell[cell[ARM] == b]
    if not paired:
        return va[VALUE].to_numpy(float), vb[VALUE].to_numpy(float), ""
    both = va[["seed", VALUE]].merge(vb[["seed", VALUE]], on="seed", suffixes=("_a", "_b"))
    both = both.sort_values("seed")
    lost = len(va) + len(vb) - 2 * len(both)
    note = f"{lost} unpaired run(s) left out" if lost else ""
    return both[f"{VALUE}_a"].to_numpy(float), both[f"{VALUE}_b"].to_numpy(float), note


def _mean(v: np.ndarray) -> float:
    return float(v.mean()) if v.size else float("nan")


def _describe(key: dict[str, object]) -> str:
    return f" ({', '.join(f'{k}={v}' for k, v in key.items())})" if key else ""
