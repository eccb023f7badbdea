"""Bootstrap over seeds: resampled means and percentile intervals.

Each arm's seeds are resampled with replacement independently (the seeds of different arms are
different runs). The configuration chosen by tuning is held fixed inside the resamples, so the
intervals describe seed noise given the tuning, not the uncertainty of the tuning itself.
"""

from __future__ import annotations

import numpy as np

#: Default number of bootstrap resamples.
N_BOOT = 2000
#: Default two-sided confidence level of intervals.
CONFIDENCE = 0.95


def resampled_means(values: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_boot`` resamples (with replacement) of ``values``; shape (n_boot,).

    Infinite values (diverged seeds) propagate: a resample holding one has an infinite mean.
    """
    values = np.asarray(values, dtype=float)
    assert values.ndim == 1 and values.size > 0
    idx = rng.integers(0, values.size, size=(n_boot, values.size))  # (n_boot, n)
    return values[idx].mean(axis=1)


def interval(samples: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Percentile interval of the non-NaN ``samples`` (NaN, NaN when there are none).

    The ``inverted_cdf`` quantile picks sample values without interpolating, so infinite
    samples give an infinite bound rather than NaN.
    """
    s = np.asarray(samples, dtype=float)
    s = s[~np.isnan(s)]
    if s.size == 0:
        return float("nan"), float("nan")
    tail = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(s, [tail, 1.0 - tail], method="inverted_cdf")
    return float(lo), float(hi)
