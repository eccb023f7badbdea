"""Performance profiles over cells, AlgoPerf-style (Dahl et al. 2023, "Benchmarking Neural
Network Training Algorithms", Sec. 4.5), on tokens- or time-to-target.

In each cell (a combination of the ``--by`` conditions: model, batch size, ...) every arm (a
method, :mod:`harness.analysis.rows.arm_labels`) gets one time t: for each of its configurations the
median over seeds of the run's time-to-target (+inf when censored), then the fastest
configuration (the arm tuned on the same runs, as elsewhere in the analysis). The arm's
performance ratio in the cell is ``r = t / min over arms of t``; +inf when the arm never reached
the target there, or has no runs there, or no arm did.

The profile of an arm is ``rho(tau) = (1 / cells) * #{cells : r <= tau}`` for tau >= 1: the
fraction of cells where it is within a factor tau of the best arm (rho(1): where it is the best).
Its score is the normalised area under the profile up to ``tau_max`` (AlgoPerf: 4),
``(1 / (tau_max - 1)) * integral_1^tau_max rho(tau) dtau``: 1 for an arm best in every cell,
0 for one never within ``tau_max``. The profile is a step function, so the area is exact:
each cell with ``r <= tau_max`` adds ``(tau_max - r) / (cells * (tau_max - 1))``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from harness.analysis.stats.frame import METHOD

#: AlgoPerf's upper limit of the ratio integrated over.
TAU_MAX = 4.0
#: The taus at which ``analyze profiles`` tabulates rho.
TABLE_TAUS = (1.0, 1.25, 1.5, 2.0, 4.0)
#: Columns of :func:`arm_times` and :func:`ratios`.
TIME, BEST, RATIO = "time", "best", "ratio"


def arm_times(
    runs: pd.DataFrame, keys: Sequence[str], over: Sequence[str], measure: str
) -> pd.DataFrame:
    """One time per cell and arm: the fastest configuration's median over seeds of ``measure``.

    Args:
        runs: one row per run, with the ``keys``, ``method``, ``over`` and ``measure`` columns
            (``measure`` +inf for a censored run).
        keys: the cell columns.
        over: the tuned columns (a configuration is one combination of their values).
        measure: the column holding each run's tokens- or time-to-target.

    Returns:
        ``[*keys, method, time]``, one row per cell and arm that has runs.
    """
    cell = [*keys, METHOD]
    config = runs.groupby([*cell, *over], dropna=False, sort=True)[measure].median().reset_index()
    return config.groupby(cell, dropna=False, sort=True)[measure].min().reset_index(name=TIME)


def ratios(times: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Each arm's performance ratio in each cell; an arm without runs in a cell gets time +inf.

    Returns:
        ``[*keys, method, time, best, ratio]`` for every cell x every arm.
    """
    arms = sorted(times[METHOD].unique())
    cells = times[list(keys)].drop_duplicates() if keys else pd.DataFrame(index=[0])
    full = cells.merge(pd.DataFrame({METHOD: arms}), how="cross")
    out = full.merge(times, on=[*keys, METHOD], how="left").fillna({TIME: math.inf})
    best = out.groupby(list(keys), dropna=False)[TIME].transform("min") if keys else out[TIME].min()
    out[BEST] = best
    with np.errstate(invalid="ignore"):
        ratio = out[TIME] / out[BEST]
    out[RATIO] = ratio.where(np.isfinite(out[BEST]), math.inf).fillna(math.inf)
    return out.reset_index(drop=True)


def rho(table: pd.DataFrame, taus: Sequence[float]) -> pd.DataFrame:
    """The profile: ``[method, tau, rho]`` for each arm and tau (``table`` from
    :func:`ratios`)."""
    rows = [
        {METHOD: arm, "tau": tau, "rho": float((part[RATIO] <= tau).mean())}
        for arm, part in table.groupby(METHOD, sort=True)
        for tau in taus
    ]
    return pd.DataFrame(rows, columns=[METHOD, "tau", "rho"])


def score(table: pd.DataFrame, tau_max: float = TAU_MAX) -> pd.Series:
    """Each arm's normalised area under its profile on [1, ``tau_max``] (module docstring)."""
    if tau_max <= 1:
        raise ValueError(f"tau_max must exceed 1, got {tau_max}")

    def area(r: pd.Series) -> float:
        inside = r[r <= tau_max]
        return float((tau_max - inside).sum() / (len(r) * (tau_max - 1)))

    return table.groupby(METHOD, sort=True)[RATIO].apply(area).rename("score")
