"""One two-arm comparison, b against a, used by ``harness bench``'s verdict and by
``harness analyze compare`` alike (the same rows give the same reading, difference and
interval in both).

- **Paired by seed** where both arms ran the same seeds (each seed once): the t test and t
  interval of the per-seed differences b - a (n - 1 df). Batches are a pure function of
  (seed, step) and the initialisation follows the seed, so two arms on one seed share both:
  the seed is a blocking factor and the paired test removes the variance the arms share.
- **Welch** otherwise (Welch-Satterthwaite df), **Banerjee** where the seed counts differ
  (:mod:`~harness.analysis.stats.banerjee`: Welch under-covers there).
- **Zero spread** (identical seeds, or per-seed differences that do not vary) is *no verdict*:
  no test has anything to weigh (a p of 0 from no noise is not evidence).
- **Diverged seeds** (a non-finite value) are an outcome of their own: the arms' counts of
  diverged seeds are compared by Fisher's exact test (two-sided, ``scipy.stats.fisher_exact``),
  inside the same correction as the loss tests; its reading is about the rate of divergence
  (``higher``: b diverges more), never about the loss, and no interval is given. The losses of
  a comparison with a diverged seed are not tested (the finite seeds alone would be a
  selected sample).

The p-values of one family are corrected together (:func:`correct_family`, Holm by default),
and each interval is given at the level of its reading (:func:`~harness.analysis.stats.corrections.
reading_levels`: for Holm, the step's level alpha / (m - r + 1) at which the comparison was
tested), so that an interval excludes 0 exactly where the reading is ``lower`` or ``higher``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats

from harness.analysis.stats.corrections import CORRECTIONS, Adjust, reading_levels
from harness.analysis.stats.defaults import Alternative
from harness.analysis.stats.intervals import ZERO_VARIANCE, linear_interval, welch_p_value

Method = Literal["paired by seed", "welch", "banerjee", "fisher exact (diverged seeds)", "none"]
"""How a comparison was tested."""
TwoArmReading = Literal["lower", "higher", "no evidence", "no verdict"]
"""What a comparison says about b against a (``lower``: b's value, or for diverged seeds its
rate of divergence, is lower), after the correction."""
FISHER: Method = "fisher exact (diverged seeds)"
ONE_SEED_NOTE = "fewer than 2 seeds in an arm: no test"
MIN_SEEDS = 2
"""Fewest seeds (pairs) per arm a test takes."""
RELATIVE_TOLERANCE = 1e-12
"""Spread (relative to the values' size) at or below which seeds count as identical."""
PAIRED_ZERO_VARIANCE = (
    "identical seeds: the per-seed differences do not vary (zero variance of the paired "
    "differences): no interval and no test"
)


@dataclass(frozen=True, slots=True)
class TwoArmTest:
    """One comparison's test, before the correction over its family."""

    difference: float
    """mean(b) - mean(a); for diverged seeds, b's share of diverged seeds - a's."""
    statistic: float
    """t (NaN for Fisher's test or without a test)."""
    p: float
    """p-value under the alternative (NaN: no test, see ``note``)."""
    n_a: int
    """Seeds of a (pairs when paired)."""
    n_b: int
    """Seeds of b."""
    method: Method
    """How it was tested."""
    note: str = ""
    """Why there is no test, or what was left out."""
    weights: tuple[float, ...] = ()
    """The variance terms of the difference (for its interval)."""
    dfs: tuple[float, ...] = ()
    """Their degrees of freedom."""

    @property
    def diverged(self) -> bool:
        """Whether this is the test of diverged seeds (no loss test, no interval)."""
        return self.method == FISHER

    def interval(self, confidence: float) -> tuple[float, float]:
        """The two-sided interval of :attr:`difference` at ``confidence`` (NaN without one)."""
        if not self.weights or math.isnan(self.p):
            return math.nan, math.nan
        lo, hi = linear_interval(self.difference, list(self.weights), list(self.dfs), confidence)
        return float(lo), float(hi)


@dataclass(frozen=True, slots=True)
class TwoArmResult:
    """One comparison after the correction over its family (as scipy's ``TtestResult``)."""

    difference: float
    """mean(b) - mean(a) (for diverged seeds: the difference of the shares diverged)."""
    ci_low: float
    """The interval of the difference at ``confidence`` (NaN without a loss test)."""
    ci_high: float
    """Its upper end."""
    confidence: float
    """The interval's two-sided level: that of the reading (1 - the Holm step's level)."""
    p: float
    """The comparison's own p-value."""
    p_adjusted: float
    """Corrected over the family."""
    reading: TwoArmReading
    """lower, higher (corrected p < alpha), no evidence, or no verdict (no test)."""
    n_a: int
    """Seeds of a."""
    n_b: int
    """Seeds of b."""
    method: Method
    """How it was tested."""
    note: str
    """Why there is no test, or what was left out."""
    statistic: float = math.nan
    """t (NaN for Fisher's test)."""

    @property
    def diverged(self) -> bool:
        """Whether the reading is about diverged seeds (not the loss)."""
        return self.method == FISHER


def two_arm_test(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    seeds_a: Sequence[int] | np.ndarray | None = None,
    seeds_b: Sequence[int] | np.ndarray | None = None,
    alternative: Alternative = "two-sided",
) -> TwoArmTest:
    """Test b against a (module docstring): paired by seed where both ran the same seeds."""
    va, vb = np.asarray(a, float), np.asarray(b, float)
    if not (np.isfinite(va).all() and np.isfinite(vb).all()):
        return _diverged(va, vb, alternative)
    paired = _pairs(va, vb, seeds_a, seeds_b)
    if paired is not None:
        va, vb = paired
    n_a, n_b = int(va.size), int(vb.size)
    if min(n_a, n_b) < MIN_SEEDS:
        d = float(vb.mean() - va.mean()) if n_a and n_b else math.nan
        return TwoArmTest(d, math.nan, math.nan, n_a, n_b, "none", ONE_SEED_NOTE)
    d = float(vb.mean() - va.mean())
    if paired is not None:
        weights, dfs = [float((vb - va).var(ddof=1)) / n_a], [n_a - 1.0]
        method: Method = "paired by seed"
    else:
        weights = [float(va.var(ddof=1)) / n_a, float(vb.var(ddof=1)) / n_b]
        dfs = [n_a - 1.0, n_b - 1.0]
        method = "welch" if n_a == n_b else "banerjee"
    if _no_spread(va, vb, paired=False):  # identical seeds in each arm: no noise at all
        return TwoArmTest(d, math.nan, math.nan, n_a, n_b, method, ZERO_VARIANCE)
    if paired is not None and _no_spread(va, vb, paired=True):  # differences do not vary
        return TwoArmTest(d, math.nan, math.nan, n_a, n_b, method, PAIRED_ZERO_VARIANCE)
    p = welch_p_value(d, weights, dfs, alternative)
    t = d / math.sqrt(sum(weights))
    return TwoArmTest(d, t, p, n_a, n_b, method, "", tuple(weights), tuple(dfs))


def _no_spread(va: np.ndarray, vb: np.ndarray, paired: bool) -> bool:
    """Whether the values (paired: their per-seed differences) do not vary beyond rounding
    (a relative 1e-12 of their size: differences of 0.5 +- 1e-16 are identical seeds)."""
    scale = max(1.0, float(np.abs(va).max()), float(np.abs(vb).max()))
    spread = float(np.ptp(vb - va)) if paired else max(float(np.ptp(va)), float(np.ptp(vb)))
    return spread <= RELATIVE_TOLERANCE * scale


def _pairs(
    va: np.ndarray,
    vb: np.ndarray,
    seeds_a: Sequence[int] | np.ndarray | None,
    seeds_b: Sequence[int] | np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray] | None:
    """a and b ordered by seed where both ran exactly the same seeds, each once; else None."""
    if seeds_a is None or seeds_b is None:
        return None
    sa, sb = [int(s) for s in seeds_a], [int(s) for s in seeds_b]
    if len(set(sa)) != len(sa) or set(sa) != set(sb) or len(sa) != len(sb) or len(sa) < 2:
        return None
    ia, ib = np.argsort(sa, kind="stable"), np.argsort(sb, kind="stable")
    return va[ia], vb[ib]


def _diverged(va: np.ndarray, vb: np.ndarray, alternative: Alternative) -> TwoArmTest:
    """Fisher's exact test of the counts of diverged (non-finite) seeds."""
    ka, kb = int((~np.isfinite(va)).sum()), int((~np.isfinite(vb)).sum())
    n_a, n_b = int(va.size), int(vb.size)
    # rows: b, a; columns: diverged, finished. "greater" (b diverges more) is odds ratio > 1.
    alt = {"two-sided": "two-sided", "less": "less", "greater": "greater"}[alternative]
    p = float(stats.fisher_exact([[kb, n_b - kb], [ka, n_a - ka]], alternative=alt).pvalue)
    note = f"diverged on {kb} of {n_b} (b) and {ka} of {n_a} (a) seeds: losses not tested"
    return TwoArmTest(kb / n_b - ka / n_a, math.nan, p, n_a, n_b, FISHER, note)


def correct_family(
    tests: Sequence[TwoArmTest],
    *,
    alpha: float = 0.05,
    correction: str = "holm",
    alternative: Alternative = "two-sided",
    adjust: Adjust | None = None,
    keys: Sequence[str] = (),
    spent: Sequence[float] | None = None,
) -> list[TwoArmResult]:
    """Correct the p-values of ``tests`` as one family and read each at its corrected level.

    Args:
        tests: the family's comparisons (:func:`two_arm_test`); those without a test (NaN p)
            read ``no verdict`` and do not count in the family.
        alpha: the family-wise level.
        correction: a name in :data:`~harness.analysis.stats.corrections.CORRECTIONS`.
        alternative: the tests' alternative (a one-sided test's interval is two-sided at
            1 - 2 gamma, so that its bound on the tested side is the one-sided 1 - gamma bound).
        adjust: corrects over a wider family instead (``--family``), with ``keys``.
        keys: each test's claim key (for ``adjust``).
        spent: the share of alpha each test may spend (a sequential stage's weight,
            :mod:`~harness.analysis.stats.sequential`; None: all of it): the family is corrected
            over p / spent (capped at 1) and each interval drawn at 1 - spent x its level, so
            that it still excludes 0 exactly where the reading is lower or higher.
    """
    share = np.ones(len(tests)) if spent is None else np.asarray(spent, float)
    p = np.minimum(np.array([t.p for t in tests], float) / share, 1.0)
    p_adj = adjust(p, keys) if adjust else CORRECTIONS[correction](p)
    levels = reading_levels(p, p_adj, alpha, None if adjust else correction) * share
    out = []
    for t, pa, gamma in zip(tests, p_adj, levels, strict=True):
        if math.isnan(t.p):
            out.append(_result(t, math.nan, math.nan, math.nan, math.nan, "no verdict"))
            continue
        conf = 1.0 - float(gamma if alternative == "two-sided" else 2.0 * gamma)
        lo, hi = t.interval(conf)
        reading: TwoArmReading = "no evidence"
        if pa < alpha:
            reading = "lower" if t.difference < 0 else "higher"
        out.append(_result(t, lo, hi, conf, float(pa), reading))
    return out


def _result(
    t: TwoArmTest, lo: float, hi: float, conf: float, p_adj: float, reading: TwoArmReading
) -> TwoArmResult:
    return TwoArmResult(
        t.difference, lo, hi, conf, t.p, p_adj, reading, t.n_a, t.n_b, t.method, t.note, t.statistic
    )


def two_arms(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    seeds_a: Sequence[int] | np.ndarray | None = None,
    seeds_b: Sequence[int] | np.ndarray | None = None,
    alpha: float = 0.05,
    alternative: Alternative = "two-sided",
) -> TwoArmResult:
    """One comparison on its own (a family of one): :func:`two_arm_test`, then
    :func:`correct_family`.

    Example:
        >>> r = two_arms([5.0, 5.1, 5.2], [4.9, 5.01, 5.1], seeds_a=[1, 2, 3], seeds_b=[1, 2, 3])
        >>> r.method, r.reading
        ('paired by seed', 'lower')
    """
    t = two_arm_test(a, b, seeds_a=seeds_a, seeds_b=seeds_b, alternative=alternative)
    return correct_family([t], alpha=alpha, correction="none", alternative=alternative)[0]
