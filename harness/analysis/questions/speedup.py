"""``harness analyze speedup``: the budget ratio b needs to match a's final value."""

from __future__ import annotations

from collections.abc import Sequence

from harness.analysis.questions import query
from harness.analysis.questions.answer import Answer
from harness.analysis.questions.query import Query
from harness.analysis.rows.selectors import Selector
from harness.analysis.stats import METHODS, power_law
from harness.analysis.stats.defaults import CONFIDENCE, N_BOOT
from harness.analysis.stats.reaching import Crossing
from harness.core.errors import UserError


def answer(
    q: Query,
    *,
    a: Selector,
    b: Selector,
    x: str = "tokens",
    by: Sequence[str] = (),
    over: Sequence[str] = (),
    confidence: float = CONFIDENCE,
    target: float | None = None,
    curve: str | None = None,
    measure: str = "steps",
    crossing: Crossing = "interpolated",
    threshold: float | None = None,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> Answer:
    """``analyze speedup``: the budget ratio b needs to match a's final value; with ``target``,
    the ratio of the steps (tokens, seconds) each arm needs to reach it, read from the curves
    (:mod:`harness.analysis.questions.target_speedup`)."""
    if target is not None:
        from harness.analysis.questions import target_speedup

        return target_speedup.answer(
            q,
            a=a,
            b=b,
            target=target,
            curve=curve,
            by=by,
            over=over,
            measure=measure,
            crossing=crossing,
            threshold=threshold,
            confidence=confidence,
            n_boot=n_boot,
            seed=seed,
        )
    if curve is not None or threshold is not None:
        raise UserError("--curve and --threshold read the curves: give --target too")
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
