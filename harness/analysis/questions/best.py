"""``harness analyze best``: each cell's best configuration, with its seed statistics."""

from __future__ import annotations

from collections.abc import Sequence

from harness.analysis.questions.answer import Answer
from harness.analysis.questions.query import Query, load, tuned


def answer(q: Query, *, by: Sequence[str] = (), over: Sequence[str] = ()) -> Answer:
    """``analyze best``: each cell's best configuration, with its seed statistics."""
    prep, goal = load(q)
    t = tuned(prep, goal, list(by), over)
    return Answer(table=t.table, notes=t.notes)
