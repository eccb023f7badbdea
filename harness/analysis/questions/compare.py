"""``harness analyze compare``: b against a per cell, with a significance test."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from harness.analysis.questions import family as families
from harness.analysis.questions import query
from harness.analysis.questions.answer import Answer
from harness.analysis.questions.query import Query, hypothesis, resolve_alternative
from harness.analysis.rows.direction import metric_goal
from harness.analysis.rows.selectors import Selector
from harness.analysis.stats import (
    METHODS,
    SPENDING,
    UNEQUAL_N,
    SequentialDesign,
    pooled,
    sequential_design,
    significance,
)
from harness.analysis.stats.defaults import (
    DEFAULT_SPENDING,
    Alternative,
    Correction,
    TestName,
    TunedMode,
)
from harness.core.errors import UserError, unknown_choice


def answer(
    q: Query,
    *,
    a: Selector,
    b: Selector,
    by: Sequence[str] = (),
    over: Sequence[str] = (),
    test: TestName = "auto",
    alternative: Alternative | Literal["auto"] = "auto",
    alpha: float = 0.05,
    correction: Correction = "holm",
    tuned_mode: TunedMode = "grid",
    fit_axis: str = "lr",
    pooled_variance: bool = False,
    family: str | None = None,
    stages: str | None = None,
    spending: str = DEFAULT_SPENDING,
) -> Answer:
    """``analyze compare``: b against a per cell, with a significance test (``stages``:
    ``3,5,8``, read as ``harness bench`` reads a protocol with those stages and ``spending``)."""
    goal = metric_goal(q.metric, q.goal)
    design = _design(stages, spending) if stages else None
    staged_auto = design is not None and alternative == "auto"  # the bench's tests: two-sided
    alt: Alternative = "two-sided" if staged_auto else resolve_alternative(goal, alternative)
    significance.check_choices(test, alt, correction, alpha)
    t, goal = query.arms_tuned(
        q, {"--a": a, "--b": b}, by, over, tuned_mode=tuned_mode, fit_axis=fit_axis
    )
    fam = families.family(q, family, "compare", [a.label, b.label], correction) if family else None
    out = significance.compare(
        t.seeds,
        [*by, *t.added],
        a.label,
        b.label,
        test=test,
        alternative=alt,
        alpha=alpha,
        correction=correction,
        pooled_variance=pooled_variance,
        adjust=fam,
        stages=design,
    )
    h1 = f"{test} test, {hypothesis(a.label, b.label, alt)}, alpha {alpha}"
    if design:
        shares = ", ".join(f"{w:.3g}" for w in design.weights)
        h1 += (
            f"; sequential stages of {', '.join(map(str, design.stages))} seeds per arm (each "
            f"cell's seeds in ascending order), {spending} spending ({shares} of alpha), as "
            "harness bench reads them; stage: where each stopped"
        )
    method = METHODS["paired"] if test == "paired" else METHODS["diff"]
    if test == "auto":
        method = (
            f"{METHODS['paired']} where both arms ran the same seeds (method: paired by "
            f"seed), else {method}"
        )
    level = (
        "at the level of the reading (1 - alpha with no correction; Holm: 1 - the step's "
        "level alpha / (m - r + 1)"
        + (", times the share of alpha of the stage read" if design else "")
        + "), so that it excludes 0 exactly where significant"
    )
    unequal = test in ("welch", "auto") and bool((out["n_a"] != out["n_b"]).any())
    return Answer(
        table=out,
        notes=[
            *t.notes,
            h1,
            fam.note(str(family))
            if fam
            else f"correction: {correction} over the {int(out['p'].notna().sum())} cell(s); "
            "significant: p_adj < alpha",
            f"ci_low..ci_high: {method} of diff, two-sided, {level}",
            *([UNEQUAL_N] if unequal else []),
            *([pooled.NOTE] if pooled_variance else []),
        ],
    )


def _design(stages: str, spending: str) -> SequentialDesign:
    """``--stages 3,5,8`` and ``--spending`` as a design (one line, exit 2, when invalid)."""
    try:
        counts = tuple(int(s) for s in stages.split(","))
    except ValueError:
        raise UserError(f"--stages {stages}: comma-separated seed counts, e.g. 3,5,8") from None
    if spending not in SPENDING:
        raise unknown_choice("--spending", spending, SPENDING)
    try:
        return sequential_design(counts, spending)
    except ValueError as e:
        raise UserError(f"--stages {stages}: {e}") from None
