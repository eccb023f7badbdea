"""``harness analyze speedup``: the budget ratio b needs to match a's final value."""

from __future__ import annotations

from collections.abc import Sequence

from harness.analysis.questions import query
from harness.analysis.questions.answer import Answer
from harness.analysis.questions.query import Query
from harness.analysis.rows.selectors import Selector
from harness.analysis.stats import power_law
from harness.analysis.stats.defaults import CONFIDENCE
from harness.analysis.stats.intervals import METHODS


def answer(
    q: Query,
    *,
    a: Selector,
    b: Selector,
    x: str = "tokens",
    by: Sequence[str] = (),
    over: Sequence[str] = (),
    confidence: float = CONFIDENCE,
) -> Answer:
    """``analyze speedup``: the budget ratio b needs to match a's final value."""
    t, goal = query.arms_tuned(q, {"--a": a, "--b": b}, by, over, x=x)
    out = power_law.speedup(
        t.seeds,
        [*by, *t.added],
        x,
        a.label,
        b.label,
        goal,
        confidence=confidence,
    )
    reading = (
        f"ratio: budget {b.label} needs / {a.label}'s largest budget to reach {a.label}'s final"
    )
    method = f"ratio interval: {METHODS['delta']}, {100 * confidence:g}%"
    return Answer(table=out, notes=[*t.notes, reading, method])
