"""``harness analyze crossover``: the x at which b starts to beat a."""

from __future__ import annotations

from collections.abc import Sequence

from harness.analysis.questions import query
from harness.analysis.questions.answer import Answer
from harness.analysis.questions.query import Query
from harness.analysis.rows.selectors import Selector
from harness.analysis.stats import CONFIDENCE, METHODS, N_BOOT, crossing
from harness.analysis.stats.defaults import TunedMode


def answer(
    q: Query,
    *,
    x: str,
    a: Selector,
    b: Selector,
    by: Sequence[str] = (),
    over: Sequence[str] = (),
    n_boot: int = N_BOOT,
    confidence: float = CONFIDENCE,
    seed: int = 0,
    tuned_mode: TunedMode = "grid",
    fit_axis: str = "lr",
) -> Answer:
    """``analyze crossover``: the x at which b starts to beat a."""
    t, goal = query.arms_tuned(
        q, {"--a": a, "--b": b}, by, over, x=x, tuned_mode=tuned_mode, fit_axis=fit_axis
    )
    out = crossing.crossover(
        t.seeds,
        [*by, *t.added],
        x,
        a.label,
        b.label,
        goal,
        n_boot=n_boot,
        confidence=confidence,
        seed=seed,
    )
    return Answer(
        table=out,
        notes=[
            *t.notes,
            f"a = {a.label}, b = {b.label}; b_better: where b beats a",
            f"crossover interval: {METHODS['crossing']}, {100 * confidence:g}%; p_boot: share "
            f"of {n_boot} percentile-bootstrap resamples with a crossover in the same direction "
            "(descriptive, not a calibrated probability)",
        ],
    )
