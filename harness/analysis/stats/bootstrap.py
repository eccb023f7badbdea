"""Bootstrap over seeds: resampled means (the crossover's ``p_boot``).

Percentile-bootstrap intervals are not used: at 3 seeds they cover the truth about 80 % of the
time (``docs/statistics.md``); the intervals come from :mod:`harness.analysis.stats.intervals`.

Each arm's seeds are resampled with replacement independently (the seeds of different arms are
different runs). The configuration chosen by tuning is held fixed inside the resamples, so the
intervals describe seed noise given the tuning, not the uncertainty of the tuning itself.
"""

from __future__ import annotations

import numpy as np


def resampled_means(values: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_boot`` resamples (with replacement) of ``values``; shape (n_boot,).

    Infinite values (diverged seeds) propagate: a resample holding one has an infinite mean.
    """
    values = np.asarray(values, dtype=float)
    assert values.ndim == 1 and values.size > 0
    idx = rng.integers(0, values.size, size=(n_boot, values.size))  # (n_boot, n)
    means: np.ndarray = values[idx].mean(axis=1)  # (n_boot,)
    return means
