"""``harness analyze critical-batch``: steps to a target loss at each batch size, and the
critical batch size (the statistics: :mod:`harness.analysis.stats.critical_batch` and
:mod:`harness.analysis.stats.batch_fit`)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from harness.analysis.questions.answer import Answer
from harness.analysis.questions.query import Query, load, tuned
from harness.analysis.rows.load import select
from harness.analysis.stats.batch_fit import OVERHEAD
from harness.analysis.stats.critical_batch import (
    LOSS,
    curves_by_run,
    default_target,
    steps_table,
)
from harness.analysis.stats.defaults import CONFIDENCE
from harness.analysis.stats.intervals import METHODS
from harness.core.errors import UserError


def answer(
    q: Query,
    *,
    by: Sequence[str],
    over: Sequence[str],
    x: str = "batch_size",
    target: float | None = None,
    reference_batch: float = 0.0,
    confidence: float = CONFIDENCE,
) -> Answer:
    """``analyze critical-batch``."""
    prep, goal = load(q)
    rows = prep.rows
    if x not in rows.columns or rows[x].nunique() < 2:
        raise UserError(f"--x {x!r}: needs a column with at least 2 values (batch sizes)")
    if not reference_batch >= 0:
        raise UserError(f"--reference-batch {reference_batch!r}: expected a batch size >= 0")
    cells = [*by, "optimizer"] if "optimizer" not in by else list(by)
    t = tuned(prep, goal, [*cells, x], over)
    curves = select(q.grid, results=q.results, scale=q.scale, where=q.where).frame("curves")
    by_run = curves_by_run(curves, t.seeds["run_id"])
    if not by_run:
        raise UserError("no loss curves for the tuned runs: critical-batch reads the curves")
    given = target is not None
    target = target if target is not None else default_target(by_run)
    cells += t.added
    table = steps_table(t.seeds, by_run, cells, x, float(target), confidence, reference_batch)
    ref = f"B_ref = {reference_batch:g}" if reference_batch else "B_ref = 0 (the fit's limit)"
    notes = [
        *t.notes,
        f"target: {LOSS} <= {target:.4g} "
        + ("(--target)" if given else "(default: the highest loss every tuned run reaches)"),
        f"critical batch: S(B) = a + b/B fitted over every batch size (weights 1/(B S)^2); "
        f"B* where the steps exceed linear scaling from {ref} by {100 * OVERHEAD:g} % "
        f"(Zhang et al. 2024): B* = {1 + OVERHEAD:g} B_ref + {OVERHEAD:g} b/a; "
        "overhead: B S(B) / (a B_ref + b)",
        f"steps interval: {METHODS['mean']}; critical batch interval: {METHODS['ratio']} on "
        f"b/a; {100 * confidence:g}%",
        *_length_notes(table),
    ]
    return Answer(table=table, notes=notes)


def _length_notes(table: pd.DataFrame) -> list[str]:
    lengths = table.attrs.get("lengths", ())
    if len(set(lengths)) < 2:
        return []
    phases = table["phase"].dropna()
    return [
        f"runs of different lengths compared ({min(lengths):g}..{max(lengths):g} steps): each "
        f"reaches the target at a different phase of its schedule (phase "
        f"{phases.min():.2f}..{phases.max():.2f} of its run)"
    ]
