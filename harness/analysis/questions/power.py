"""``harness analyze power``: seeds needed to detect a difference between b and a, and the
smallest difference the present seeds detect (the statistics:
:mod:`harness.analysis.stats.power`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from harness.analysis.questions.answer import Answer
from harness.analysis.questions.query import (
    Query,
    hypothesis,
    load,
    resolve_alternative,
    tuned,
    with_rows,
)
from harness.analysis.rows.direction import metric_goal
from harness.analysis.rows.selectors import Selector, label_arms
from harness.analysis.stats import ARM, power_table
from harness.analysis.stats.defaults import Alternative, PowerTest
from harness.analysis.stats.power import SEEDS_RANGE, TESTS
from harness.core.errors import UserError, unknown_choice


def answer(
    q: Query,
    *,
    by: Sequence[str],
    over: Sequence[str],
    a: Selector,
    b: Selector,
    test: PowerTest = "welch",
    alternative: Alternative | Literal["auto"] = "auto",
    alpha: float = 0.05,
    power: float = 0.8,
    difference: float | None = None,
) -> Answer:
    """``analyze power``."""
    if test not in TESTS:
        raise unknown_choice("--test", test, TESTS)
    if not (0 < alpha < 1 and 0 < power < 1):
        raise UserError(f"--alpha and --power must be in (0, 1), got {alpha} and {power}")
    goal = metric_goal(q.metric, q.goal)
    alt = resolve_alternative(goal, alternative)
    if test == "paper" and alt == "two-sided":
        raise UserError("--test paper is one-sided: use --alternative less or greater")
    prep, goal = load(q)
    rows = label_arms(prep.rows, {"--a": a, "--b": b})
    t = tuned(with_rows(prep, rows), goal, [*by, ARM], over)
    out = power_table(
        t.seeds,
        [*by, *t.added],
        a.label,
        b.label,
        test=test,
        alternative=alt,
        alpha=alpha,
        target=power,
        difference=difference,
    )
    planned = "the observed |diff|" if difference is None else f"{abs(difference):g}"
    notes = [
        *t.notes,
        f"{test} t test, {hypothesis(a.label, b.label, alt)}, alpha {alpha:g} per cell "
        "(no correction over cells: with m cells, Holm needs up to alpha / m)",
        f"power: at difference = {planned} with the present seeds (Welch: the test's actual "
        "rejection rate up to 30 seeds per arm, noncentral t beyond; paper: noncentral t); "
        f"seeds_needed: per arm for power {power:g}, with seeds_needed_low..high from each "
        f"seed variance's {100 * SEEDS_RANGE:g}% chi-square interval; detectable: smallest "
        f"difference with power {power:g} at the present seeds",
        "the seed variances are estimated from the present seeds: these are estimates",
    ]
    return Answer(table=out, notes=notes)
