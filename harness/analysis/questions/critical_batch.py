"""``harness analyze critical-batch``: steps to a target loss at each batch size, and the
critical batch size (the statistics: :mod:`harness.analysis.stats.critical_batch`)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.analysis.questions.answer import Answer
from harness.analysis.questions.query import Query, load, tuned
from harness.analysis.rows.load import select
from harness.analysis.stats.bootstrap import CONFIDENCE
from harness.analysis.stats.critical_batch import (
    LOSS,
    OVERHEAD,
    curves_by_run,
    default_target,
    steps_table,
)
from harness.analysis.stats.intervals import METHODS
from harness.core.errors import UserError


def answer(
    q: Query,
    *,
    by: Sequence[str],
    over: Sequence[str],
    x: str = "batch_size",
    target: float | None = None,
    confidence: float = CONFIDENCE,
) -> Answer:
    """``analyze critical-batch``."""
    prep, goal = load(q)
    rows = prep.rows
    if x not in rows.columns or rows[x].nunique() < 2:
        raise UserError(f"--x {x!r}: needs a column with at least 2 values (batch sizes)")
    cells = [*by, "optimizer"] if "optimizer" not in by else list(by)
    t = tuned(prep, goal, [*cells, x], over)
    curves = select(q.grid, results=q.results, scale=q.scale, where=q.where).frame("curves")
    by_run = curves_by_run(curves, t.seeds["run_id"])
    if not by_run:
        raise UserError("no loss curves for the tuned runs: critical-batch reads the curves")
    given = target is not None
    target = target if target is not None else default_target(by_run)
    table = steps_table(t.seeds, by_run, cells, x, float(target), confidence)
    notes = [
        *t.notes,
        f"target: {LOSS} <= {target:.4g} "
        + ("(--target)" if given else "(default: the highest loss every tuned run reaches)"),
        f"overhead: B S(B) / (B_0 S(B_0)); critical batch: overhead = {1 + OVERHEAD:g} "
        "(Zhang et al. 2024: 20 % more steps than linear scaling), interpolated in log2 B",
        f"steps interval: {METHODS['mean']}; critical batch interval: {METHODS['crossing']}; "
        f"{100 * confidence:g}%",
    ]
    return Answer(table=table, notes=notes)
