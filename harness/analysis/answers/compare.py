"""``harness analyze compare``: b against a per cell, with a significance test."""

from __future__ import annotations

from collections.abc import Sequence

from harness.analysis import commands
from harness.analysis import compare as compare_mod
from harness.analysis.commands import Query, hypothesis, resolve_alternative
from harness.analysis.goal import metric_goal
from harness.analysis.intervals import METHODS
from harness.analysis.output import Answer
from harness.analysis.select import Selector


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
    compare_mod.check_choices(test, alternative, correction, alpha)
    t, goal = commands.arms_tuned(
        q, {"--a": a, "--b": b}, by, over, tuned_mode=tuned_mode, fit_axis=fit_axis
    )
    out = compare_mod.compare(
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
