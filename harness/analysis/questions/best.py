"""``harness analyze best``: each cell's best configuration, with its seed statistics."""

from __future__ import annotations

from collections.abc import Sequence

from harness.analysis.questions.answer import Answer
from harness.analysis.questions.query import Query, load, tuned
from harness.analysis.stats import pooled
from harness.analysis.stats.defaults import CONFIDENCE
from harness.analysis.stats.frame import ARM


def answer(
    q: Query, *, by: Sequence[str] = (), over: Sequence[str] = (), pooled_variance: bool = False
) -> Answer:
    """``analyze best``: each cell's best configuration, with its seed statistics."""
    prep, goal = load(q)
    t = tuned(prep, goal, list(by), over)
    if not pooled_variance:
        return Answer(table=t.table, notes=t.notes)
    within = [ARM] if ARM in by else []
    table = pooled.mean_intervals(t.table, t.seeds, list(by), within, CONFIDENCE)
    return Answer(table=table, notes=[*t.notes, pooled.NOTE])
