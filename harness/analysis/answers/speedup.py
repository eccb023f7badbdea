"""``harness analyze speedup``: the budget ratio b needs to match a's final value."""

from __future__ import annotations

from collections.abc import Sequence

from harness.analysis import commands
from harness.analysis import speedup as speedup_mod
from harness.analysis.bootstrap import CONFIDENCE
from harness.analysis.commands import Query
from harness.analysis.intervals import METHODS
from harness.analysis.output import Answer
from harness.analysis.select import Selector


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
    t, goal = commands.arms_tuned(q, {"--a": a, "--b": b}, by, over, x=x)
    out = speedup_mod.speedup(
        t.seeds,
        list(by),
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
