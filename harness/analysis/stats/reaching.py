"""Steps-, tokens- and time-to-target of each run, with how it was read (to-target questions).

Two conventions for where a curve reaches a target (``--crossing``):

- ``first`` (AlgoPerf's scorer): the first logged point at or below the target; its step,
  tokens and seconds, no interpolation.
- ``interpolated``: linear in each measure between that point and the one before it
  (:func:`harness.analysis.stats.to_target.crossing`).

How each run's reading may be qualified:

- ``left_censored``: already at or below the target at its first logged point. Its time is an
  upper bound (it got there at some unknown earlier step); it is kept and flagged.
- ``censored``: it never reached the target (+inf, kept, never dropped). Of those, ``stopped``
  runs ended before their own planned length (``steps_done`` < ``steps``, or a status other than
  completed/diverged): they did not get the chance, which "never reached" would misstate.

Tokens come from the curve's ``tokens``; a curve without them (an imported history) derives them
as step x batch_size x seq_len when the run has both.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, get_args

import numpy as np
import pandas as pd

from harness.analysis.stats.to_target import crossing as interpolated_crossing

Crossing = Literal["first", "interpolated"]
CROSSINGS: tuple[Crossing, ...] = get_args(Crossing)
#: How each convention is stated in a note.
CROSSING_NOTES: dict[str, str] = {
    "first": "first logged point at or below it (AlgoPerf; no interpolation)",
    "interpolated": "linear between the logged points around the first crossing",
}

STEPS_TO_TARGET = "steps_to_target"
TOKENS_TO_TARGET = "tokens_to_target"
TIME_TO_TARGET = "time_to_target"
CENSORED = "censored"
LEFT_CENSORED = "left_censored"
STOPPED = "stopped"
Measure = Literal["steps", "tokens", "time"]
#: What a to-target comparison may measure: name -> column.
MEASURES: dict[str, str] = {
    "steps": STEPS_TO_TARGET,
    "tokens": TOKENS_TO_TARGET,
    "time": TIME_TO_TARGET,
}
_ALONG = ("step", "tokens", "elapsed_s")
_ENDED = ("completed", "diverged")


def crossing(
    curve: pd.DataFrame, column: str, value: float, mode: Crossing = "interpolated"
) -> tuple[tuple[float, float, float], bool]:
    """((step, tokens, seconds), left_censored) where ``column`` of one run's curve first gets
    to ``value`` or below, read by ``mode``; +inf in each when never.

    ``curve`` has ``step`` and ``column``; ``tokens`` and ``elapsed_s`` may be absent (NaN)."""
    pts = curve.dropna(subset=[column])
    for c in _ALONG:
        if c not in pts.columns:
            pts = pts.assign(**{c: math.nan})
    pts = pts.sort_values("step")
    values = pts[column].to_numpy(dtype=float)
    hit = np.flatnonzero(values <= value)
    if not hit.size:
        return (math.inf, math.inf, math.inf), False
    first = int(hit[0])
    if mode == "first" or first == 0:
        got = tuple(float(x) for x in pts[list(_ALONG)].iloc[first].to_numpy(dtype=float))
        return (got[0], got[1], got[2]), first == 0
    s, t, e = interpolated_crossing(pts, column, value, _ALONG)
    return (s, t, e), False


def reach_all(
    rows: pd.DataFrame,
    curves: pd.DataFrame,
    column: str,
    value: float,
    mode: Crossing = "interpolated",
) -> pd.DataFrame:
    """``rows`` (one per run, with ``run_id``) with the columns of :data:`MEASURES`,
    ``censored``, ``left_censored`` and ``stopped`` read from each run's points in ``curves``.
    """
    by_run = dict(tuple(curves.groupby("run_id", sort=False))) if len(curves) else {}
    empty = pd.DataFrame(columns=["step", column])
    found = [crossing(by_run.get(r, empty), column, value, mode) for r in rows["run_id"]]
    steps = np.array([f[0][0] for f in found], dtype=float)
    tokens = np.array([f[0][1] for f in found], dtype=float)
    per_step = _tokens_per_step(rows)
    derive = np.isnan(tokens) & np.isfinite(per_step)
    tokens[derive] = steps[derive] * per_step[derive]
    censored = np.isinf(steps)
    columns: dict[str, Any] = {
        STEPS_TO_TARGET: steps,
        TOKENS_TO_TARGET: tokens,
        TIME_TO_TARGET: [f[0][2] for f in found],
        CENSORED: censored,
        LEFT_CENSORED: [f[1] for f in found],
        STOPPED: censored & _stopped(rows),
    }
    return rows.assign(**columns)


def _tokens_per_step(rows: pd.DataFrame) -> np.ndarray:
    if not {"batch_size", "seq_len"} <= set(rows.columns):
        return np.full(len(rows), math.nan)
    bs = pd.to_numeric(rows["batch_size"], errors="coerce").to_numpy(dtype=float)
    seq = pd.to_numeric(rows["seq_len"], errors="coerce").to_numpy(dtype=float)
    return np.asarray(bs * seq, dtype=float)


def _stopped(rows: pd.DataFrame) -> np.ndarray:
    """Whether each run ended before its planned length (module docstring)."""
    out = ~rows["status"].astype(str).isin(_ENDED).to_numpy() if "status" in rows else None
    out = np.zeros(len(rows), dtype=bool) if out is None else out
    if {"steps", "steps_done"} <= set(rows.columns):
        planned = pd.to_numeric(rows["steps"], errors="coerce").to_numpy(dtype=float)
        done = pd.to_numeric(rows["steps_done"], errors="coerce").to_numpy(dtype=float)
        with np.errstate(invalid="ignore"):
            out = out | (done < planned)
    return np.asarray(out, dtype=bool)


def reading_notes(rows: pd.DataFrame) -> list[str]:
    """One note per kind of qualified reading among ``rows`` (from :func:`reach_all`)."""
    notes = []
    stopped = int(rows[STOPPED].sum())
    never = int(rows[CENSORED].sum()) - stopped
    if never:
        notes.append(f"{never} run(s) never reached the target: censored (inf), not dropped")
    if stopped:
        notes.append(
            f"{stopped} run(s) stopped before their planned length without reaching the target "
            "(column stopped): censored (inf), not dropped"
        )
    if n := int(rows[LEFT_CENSORED].sum()):
        notes.append(
            f"{n} run(s) already at the target at their first logged point (column "
            "left_censored): their time to target is an upper bound"
        )
    return notes


def median_steps(values: Sequence[float]) -> float:
    """The median of per-seed times to target, +inf counted as the slowest (censored)."""
    v = np.sort(np.asarray(values, dtype=float))
    return float(np.median(v)) if v.size else math.nan


#: The curve column of each measure.
ALONG = {"steps": "step", "tokens": "tokens", "time": "elapsed_s"}


def brackets(
    rows: pd.DataFrame, curves: pd.DataFrame, column: str, value: float, measure: str
) -> tuple[np.ndarray, np.ndarray]:
    """Per run of ``rows``, the logged points between which its curve reached ``value`` in
    ``measure`` (a key of :data:`ALONG`): (the last point above, the first at or below); 0 for
    the first when it was already there at its first point, and (its last point, +inf) when it
    never did. Tokens missing from a curve are derived as in :func:`reach_all`."""
    by_run = dict(tuple(curves.groupby("run_id", sort=False))) if len(curves) else {}
    per_step = _tokens_per_step(rows)
    low, high = np.zeros(len(rows)), np.full(len(rows), math.inf)
    for i, rid in enumerate(rows["run_id"]):
        pts = by_run.get(rid)
        if pts is None or column not in pts.columns:
            continue
        pts = pts.dropna(subset=[column]).sort_values("step")
        if measure == "tokens" and ("tokens" not in pts or pts["tokens"].isna().all()):
            x = pts["step"].to_numpy(dtype=float) * per_step[i]
        else:
            x = pts[ALONG[measure]].to_numpy(dtype=float)
        hit = np.flatnonzero(pts[column].to_numpy(dtype=float) <= value)
        if not hit.size:
            low[i] = x[-1] if x.size else 0.0
        else:
            high[i] = x[hit[0]]
            low[i] = x[hit[0] - 1] if hit[0] > 0 else 0.0
    return low, high
