"""Steps to a target loss at each batch size, and the critical batch size.

For each optimizer (and cell of ``--by``) and each batch size B, the tuned configuration's runs
(best by the final metric, as everywhere) are read along their loss curves: S(B) is the first
step at which the training loss reaches ``target`` (interpolated linearly between logged points;
a run that never reaches it makes S infinite). Tokens are S(B) times the tokens per step.

Each reading is checked (:func:`reading`): a run already at the target at its first logged point
is left-censored (its S is an upper bound, flagged); the share of its own run at which a run
reaches the target (``phase``) is kept, and a run that reaches it with its learning rate below
half its peak reaches it in the decay of its schedule (flagged: runs of different lengths then
compare different phases of their schedules, and the note says when lengths differ).

The critical batch size is the cited form (Zhang et al. 2024, "How does critical batch size
scale in pre-training?"): S(B) = a + b / B fitted over every batch size, B* where the steps
exceed linear scaling from a stated reference batch by 20 %
(:mod:`harness.analysis.stats.batch_fit`, with its interval and checks).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.analysis.stats.batch_fit import BatchFit, fit_critical_batch
from harness.analysis.stats.cells import iter_cells
from harness.analysis.stats.defaults import CONFIDENCE
from harness.analysis.stats.fit_check import OK
from harness.analysis.stats.intervals import mean_interval
from harness.analysis.stats.to_target import crossing

#: The curve column read.
LOSS = "train_loss"
#: Output columns of the per-batch table after the cell columns.
COLUMNS = (
    "batch_size",
    "steps",
    "steps_ci_low",
    "steps_ci_high",
    "tokens",
    "n",
    "phase",
    "overhead",
    "reference_batch",
    "critical_batch",
    "ci_low",
    "ci_high",
    "fit_check",
    "steps_check",
    "note",
)
#: A run whose learning rate at the target is below this share of its peak reached it in the
#: decay of its schedule.
DECAYED = 0.5


@dataclass(frozen=True, slots=True)
class Reading:
    """Where one run's curve reaches the target."""

    step: float
    """Step at the target (inf if never)."""
    tokens: float
    """Tokens at the target (inf if never)."""
    phase: float
    """``step`` over the run's last logged step: how far into its run (NaN if never)."""
    censored: bool
    """Already at the target at its first logged point: ``step`` is an upper bound."""
    decayed: bool
    """Learning rate at the target below :data:`DECAYED` of its peak (False without lr)."""
    length: float
    """The run's last logged step."""


def steps_to(curve: pd.DataFrame, target: float) -> tuple[float, float]:
    """(step, tokens) at which ``curve`` first reaches ``target`` (training loss; linear between
    logged points, :func:`harness.analysis.stats.to_target.crossing`); inf if never."""
    step, tokens = crossing(curve, LOSS, target, ("step", "tokens"))
    return step, tokens


def reading(curve: pd.DataFrame, target: float) -> Reading:
    """Where ``curve`` reaches ``target``, with the checks of the module docstring."""
    step, tokens = steps_to(curve, target)
    pts = curve.dropna(subset=[LOSS]).sort_values("step")
    length = float(curve["step"].max())
    censored = bool(len(pts)) and float(pts[LOSS].iloc[0]) <= target
    decayed = False
    if np.isfinite(step) and "lr" in curve.columns and curve["lr"].notna().any():
        lr = curve.dropna(subset=["lr"]).sort_values("step")
        at = float(np.interp(step, lr["step"].to_numpy(float), lr["lr"].to_numpy(float)))
        decayed = at < DECAYED * float(lr["lr"].max())
    phase = step / length if np.isfinite(step) and length > 0 else np.nan
    return Reading(step, tokens, phase, censored, decayed, length)


def steps_check(readings: Sequence[Reading]) -> str:
    """``ok``, or what is wrong with one batch size's readings."""
    out = []
    if k := sum(r.censored for r in readings):
        out.append(
            f"left-censored: {k} of {len(readings)} run(s) at the target at their first logged "
            "point (steps an upper bound)"
        )
    if k := sum(r.decayed for r in readings):
        out.append(f"{k} of {len(readings)} run(s) reach the target in their lr decay")
    return "; ".join(out) or OK


def curves_by_run(curves: pd.DataFrame, run_ids: pd.Series) -> dict[str, pd.DataFrame]:
    """The curves of ``run_ids``, each sorted by step."""
    curves = curves[curves["run_id"].isin(run_ids)].sort_values(["run_id", "step"])
    return {str(rid): c for rid, c in curves.groupby("run_id")}


def default_target(curves: dict[str, pd.DataFrame]) -> float:
    """The highest loss every run reaches: the largest of the curves' minima."""
    return max(float(c[LOSS].min()) for c in curves.values())


def steps_table(
    seeds: pd.DataFrame,
    curves: dict[str, pd.DataFrame],
    cells: Sequence[str],
    x: str,
    target: float,
    confidence: float = CONFIDENCE,
    reference_batch: float = 0.0,
) -> pd.DataFrame:
    """One row per (cell, batch size): steps and tokens to ``target``, overhead, checks, and the
    cell's critical batch size (repeated on its rows). ``attrs['lengths']``: the runs' lengths."""
    out, lengths = [], []
    for key, cell in iter_cells(seeds, cells):
        b = np.array(sorted(cell[x].unique()), float)
        per_b = []
        for bv in b:
            runs = cell.loc[cell[x] == bv, "run_id"]
            per_b.append([reading(curves[r], target) for r in runs if r in curves])
        lengths += [r.length for rs in per_b for r in rs]
        steps = [np.array([r.step for r in rs], float) for rs in per_b]
        fitted = _fit(b, steps, reference_batch, confidence)
        for bv, rs, st in zip(b, per_b, steps, strict=True):
            lo, hi = mean_interval(st, confidence)
            mean = st.mean() if st.size else np.nan
            out.append(
                key
                | {
                    "batch_size": bv,
                    "steps": mean,
                    "steps_ci_low": lo,
                    "steps_ci_high": hi,
                    "tokens": np.mean([r.tokens for r in rs]) if rs else np.nan,
                    "n": len(rs),
                    "phase": np.mean([r.phase for r in rs]) if rs else np.nan,
                    "overhead": float(fitted.overhead_at(np.array(bv), np.array(mean))),
                    "reference_batch": fitted.reference,
                    "critical_batch": fitted.critical,
                    "ci_low": fitted.ci_low,
                    "ci_high": fitted.ci_high,
                    "fit_check": fitted.fit_check,
                    "steps_check": steps_check(rs),
                    "note": fitted.note,
                }
            )
    table = pd.DataFrame(out)[[*cells, *COLUMNS]]
    table.attrs["lengths"] = tuple(lengths)
    return table


def _fit(b: np.ndarray, steps: list[np.ndarray], reference: float, conf: float) -> BatchFit:
    """The cell's fit, or a row of NaN saying why there is none."""
    if not all(s.size for s in steps):
        return BatchFit.none(reference, "a batch size without curves")
    if not all(np.isfinite(s).all() for s in steps):
        return BatchFit.none(reference, "some batch size never reaches the target")
    return fit_critical_batch(b, steps, reference=reference, confidence=conf)
