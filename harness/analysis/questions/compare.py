"""``harness analyze compare``: b against a per cell, with a significance test."""

from __future__ import annotations

from collections.abc import Sequence

from harness.analysis.questions import query
from harness.analysis.questions.answer import Answer
from harness.analysis.questions.query import Query, hypothesis, resolve_alternative
from harness.analysis.rows.direction import metric_goal
from harness.analysis.rows.selectors import Selector
from harness.analysis.stats import significance
from harness.analysis.stats.intervals import METHODS


def answer(
    q: Query,
    *,
    a: Selector,
    b: Selector,
    by: Sequence[str] = (),
    over: Sequence[str] = (),
    test: str = "welch",
    alternative: str = "auto",
    alpha: float = 0.05,
    correction: str = "holm",
    tuned_mode: str = "grid",
    fit_axis: str = "lr",
) -> Answer:
    """``analyze compare``: b against a per cell, with a significance test."""
    goal = metric_goal(q.metric, q.goal)
    alternative = resolve_alternative(goal, alternative)
    significance.check_choices(test, alternative, correction, alpha)
    t, goal = query.arms_tuned(
        q, {"--a": a, "--b": b}, by, over, tuned_mode=tuned_mode, fit_axis=fit_axis
    )
    out = significance.compare(
        t.seeds,
        list(by),
        a.label,
        b.label,
        test=test,
        alternative=alternative,
        alpha=alpha,
        correction=correction,
    )
    h1 = f"{test} test, {hypothesis(a.label, b.label, alternative)}, alpha {alpha}"
    method = METHODS["paired"] if test == "paired" else METHODS["diff"]
    return Answer(
        table=out,
        notes=[
            *t.notes,
            h1,
            f"correction: {correction} over the {int(out['p'].notna().sum())} cell(s); "
            "significant: p_adj < alpha",
            f"ci_low..ci_high: {method} of diff, two-sided {100 * (1 - alpha):g}%",
        ],
    )
