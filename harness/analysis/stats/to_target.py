"""Tokens-to-target and time-to-target of each run, read from its curve.

A run reaches a :class:`~harness.core.targets.Target` at the first curve point whose column is at
or below the target value. Between that point and the one before it (still above), the curve is
taken as linear in tokens and in elapsed seconds: the reported tokens and seconds are where the
straight line between the two points crosses the target. When the first point of the curve
already reaches it, its own tokens and seconds are reported (no extrapolation towards 0). Points
without the column (``val_loss`` between evaluations) are skipped.

A run that never reaches the target (its curve stays above, it stopped, or it has no curve) is
*censored*: its tokens- and time-to-target are +inf and ``censored`` is true, so it ranks last and
is never dropped. A diverged run counts by its curve: it may have reached the target before it
blew up. ``train_loss`` at a point is the mean over the steps logged since the previous point
(``log_every``), so its crossing is read at that resolution.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from harness.core.targets import Target

#: Columns added per run.
TOKENS_TO_TARGET = "tokens_to_target"
TIME_TO_TARGET = "time_to_target"
CENSORED = "censored"
#: What a performance profile may measure: name -> column.
MEASURES = {"tokens": TOKENS_TO_TARGET, "time": TIME_TO_TARGET}


def crossing(
    curve: pd.DataFrame, column: str, value: float, along: Sequence[str]
) -> tuple[float, ...]:
    """Where ``column`` of one run's curve first gets to ``value`` or below, in each of the
    ``along`` columns (``tokens``, ``elapsed_s``, ``step``): linear between that point and the
    one before, the first point itself when it is already there (module docstring); +inf in
    each when never. Points without ``column`` are skipped; the curve is read in step order."""
    pts = curve.dropna(subset=[column])
    pts = pts.sort_values("step") if "step" in pts.columns else pts
    values = pts[column].to_numpy(dtype=float)
    hit = np.flatnonzero(values <= value)
    if not hit.size:
        return tuple(math.inf for _ in along)
    i = int(hit[0])
    xs = [pts[c].to_numpy(dtype=float) for c in along]
    if i == 0:
        return tuple(float(x[0]) for x in xs)
    before, after = values[i - 1], values[i]
    frac = (before - value) / (before - after) if math.isfinite(before) else 1.0
    return tuple(float(x[i - 1] + frac * (x[i] - x[i - 1])) for x in xs)


def reach(curve: pd.DataFrame, target: Target) -> tuple[float, float]:
    """(tokens, seconds) at which one run's curve reaches ``target``; (inf, inf) when never.

    Args:
        curve: the run's points, with ``tokens``, ``elapsed_s`` and ``target.column``.
    """
    tokens, seconds = crossing(curve, target.column, target.value, ("tokens", "elapsed_s"))
    return tokens, seconds


def to_target(rows: pd.DataFrame, curves: pd.DataFrame, target: Target) -> pd.DataFrame:
    """``rows`` (one per run, with ``run_id``) with ``tokens_to_target``, ``time_to_target``
    and ``censored`` from each run's points in ``curves``."""
    by_run = dict(tuple(curves.groupby("run_id", sort=False))) if len(curves) else {}
    empty = curves.iloc[0:0]
    found = [reach(by_run.get(r, empty), target) for r in rows["run_id"]]
    tokens = [t for t, _ in found]
    columns: dict[str, Any] = {
        TOKENS_TO_TARGET: tokens,
        TIME_TO_TARGET: [s for _, s in found],
        CENSORED: [math.isinf(t) for t in tokens],
    }
    return rows.assign(**columns)
