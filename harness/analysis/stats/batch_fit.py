"""The critical batch size from a fit of steps against batch size (Zhang et al. 2024's form).

Steps to a target at batch size B follow S(B) = a + b / B (McCandlish et al. 2018: S_min (1 +
B_noise / B), so a = S_min and b / a = B_noise). Multiplied by B it is a straight line,
B S(B) = a B + b, fitted by weighted least squares over every measured batch size (weights
1 / (B mean S)^2: seed noise is relative, a few per cent of the steps, at every B). The fitted
coefficients are linear in the mean steps at each B (the weights taken as fixed).

Against perfect data parallelism from a stated reference batch B_ref (B S(B) = B_ref S(B_ref)),
the overhead is r(B) = (a B + b) / (a B_ref + b), and the critical batch size, where the steps
exceed linear scaling by ``overhead`` (Zhang et al.: 20 %), is

    B* = (1 + overhead) B_ref + overhead b / a.

With B_ref = 0 (the default: linear scaling from the small-batch limit of the fit) it is
overhead x B_noise and does not depend on which batch sizes the grid holds. Its interval is
Fieller's on b / a (:func:`harness.analysis.stats.intervals.ratio_interval`, t quantiles,
Welch-Satterthwaite df, inverted exactly); its coverage is measured by
``tests/coverage_simulation.py``. The fit is checked: relative residuals against the pooled
relative seed noise (:func:`harness.analysis.stats.fit_check.lack_of_fit`), a value beyond the
measured batch sizes, and a value between two measured batch sizes with none within a factor
:data:`NEAR` of it (the data then support only "between those two").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.analysis.stats.fit_check import OK, lack_of_fit
from harness.analysis.stats.intervals import ratio_interval

#: Steps over linear scaling that define the critical batch size (Zhang et al. 2024: 20 %).
OVERHEAD = 0.2
#: A measured batch size within this factor of the critical one counts as data near it.
NEAR = 2**0.5


@dataclass(frozen=True, slots=True)
class BatchFit:
    """S(B) = a + b / B fitted to one cell's steps, and its critical batch size."""

    a: float
    """Steps at an infinite batch (S_min); NaN without a fit."""
    b: float
    """B S(B) in the small-batch limit (S_min B_noise)."""
    reference: float
    """The reference batch size of linear scaling (0: the fit's small-batch limit)."""
    critical: float
    """The critical batch size B*; NaN when the fit has none (no plateau, a <= 0)."""
    ci_low: float
    """Lower end of B*'s interval (NaN without one)."""
    ci_high: float
    """Upper end (inf when the plateau is not resolved: b / a not bounded)."""
    fit_check: str
    """``ok`` or the reasons the value should not be quoted as it stands."""
    note: str
    """What else the reader needs (no interval and why)."""

    @classmethod
    def none(cls, reference: float, why: str, check: str = "no fit") -> BatchFit:
        """No critical batch size, and why."""
        return cls(np.nan, np.nan, reference, np.nan, np.nan, np.nan, check, why)

    def overhead_at(self, batch: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Measured steps over linear scaling from the reference: B S(B) / (a B_ref + b)."""
        overhead: np.ndarray = batch * steps / (self.a * self.reference + self.b)
        return overhead


def _coefs(batch: np.ndarray, means: np.ndarray) -> np.ndarray:
    """(2, k): (a, b) as linear maps of the mean steps at each batch size."""
    x = np.stack([batch, np.ones_like(batch)], axis=1)  # B S = a B + b
    w = 1.0 / (batch * means) ** 2
    xtw = x.T * w
    coefs: np.ndarray = np.linalg.solve(xtw @ x, xtw) * batch  # the response is B * mean
    return coefs


def fit_critical_batch(
    batch: np.ndarray,
    steps: Sequence[np.ndarray],
    *,
    reference: float = 0.0,
    overhead: float = OVERHEAD,
    confidence: float = 0.95,
) -> BatchFit:
    """Fit S(B) = a + b / B to each batch size's per-seed steps and read B* off it.

    Args:
        batch: (k,) batch sizes, increasing, k >= 2.
        steps: per batch size, the steps to target of each seed (finite).
        reference: B_ref of linear scaling (0: the small-batch limit).
        overhead: steps over linear scaling that define B*.
        confidence: two-sided level of the interval.
    """
    batch = np.asarray(batch, float)
    means = np.array([s.mean() for s in steps])
    if batch.size < 2 or not np.isfinite(means).all() or (means <= 0).any():
        return BatchFit.none(reference, "fewer than 2 batch sizes with finite steps > 0")
    coefs = _coefs(batch, means)
    a, b = coefs @ means
    if a <= 0 or b <= 0:
        why = "steps fall at least as fast as 1/B (a <= 0): no critical batch in this fit"
        return BatchFit.none(reference, "", check=why)
    critical = (1 + overhead) * reference + overhead * b / a
    checks = _checks(batch, means, steps, a, b, critical)
    n = np.array([s.size for s in steps], float)
    std = np.array([s.std(ddof=1) if s.size > 1 else np.nan for s in steps])
    if n.min() < 2 or not (std > 0).any():
        why = "n = 1: no interval" if n.min() < 2 else "identical seeds: no interval"
        return BatchFit(a, b, reference, critical, np.nan, np.nan, "; ".join(checks) or OK, why)
    parts = [(coefs[1, j], coefs[0, j], std[j] ** 2 / n[j], n[j] - 1) for j in range(batch.size)]
    lo, hi = ratio_interval(b, a, parts, confidence)
    ci = (1 + overhead) * reference + overhead * np.array([lo, hi], float)
    note = "" if np.isfinite(ci).all() else "the plateau (a) is not resolved: interval unbounded"
    return BatchFit(
        a, b, reference, critical, float(ci[0]), float(ci[1]), "; ".join(checks) or OK, note
    )


def _checks(
    batch: np.ndarray,
    means: np.ndarray,
    steps: Sequence[np.ndarray],
    a: float,
    b: float,
    crit: float,
) -> list[str]:
    checks = []
    n = np.array([s.size for s in steps], float)
    if n.min() >= 2:
        std = np.array([s.std(ddof=1) for s in steps])
        # relative residuals against the pooled relative seed noise (noise is a share of S)
        test = lack_of_fit((means - (a + b / batch)) / means, std / means, n, 2)
        if test.rejected:
            checks.append(f"lack of fit: S(B) = a + b/B misses the means (p = {test.p:.2g})")
    if crit < batch[0] or crit > batch[-1]:
        checks.append(f"beyond the measured batch sizes {batch[0]:g}..{batch[-1]:g}")
    elif np.min(np.maximum(batch / crit, crit / batch)) > NEAR:
        i = int(np.searchsorted(batch, crit))
        checks.append(
            f"between measured batch sizes {batch[i - 1]:g} and {batch[i]:g} with none near it: "
            f"the data support only {batch[i - 1]:g} < B* < {batch[i]:g}"
        )
    return checks
