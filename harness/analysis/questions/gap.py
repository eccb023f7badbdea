"""``harness analyze gap``: every other arm's closure of the baseline-reference gap."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from harness.analysis.questions import family as families
from harness.analysis.questions import query
from harness.analysis.questions.answer import Answer
from harness.analysis.questions.query import Query
from harness.analysis.rows.selectors import Selector
from harness.analysis.stats import (
    ARM,
    CONFIDENCE,
    UNEQUAL_N,
    baseline_gap,
    iter_cells,
    pooled,
    significance,
)
from harness.analysis.stats.defaults import Correction, TunedMode
from harness.metrics.catalogue import Goal


def answer(
    q: Query,
    *,
    baseline: Selector,
    reference: Selector,
    by: Sequence[str] = (),
    over: Sequence[str] = (),
    confidence: float = CONFIDENCE,
    alpha: float = 0.05,
    correction: Correction = "holm",
    tuned_mode: TunedMode = "grid",
    fit_axis: str = "lr",
    pooled_variance: bool = False,
    family: str | None = None,
) -> Answer:
    """``analyze gap``: every other arm's closure of the baseline-reference gap."""
    significance.check_choices("welch", "two-sided", correction, alpha)
    arms = {"--baseline": baseline, "--reference": reference}
    t, goal = query.arms_tuned(
        q, arms, by, over, others=True, tuned_mode=tuned_mode, fit_axis=fit_axis
    )
    by = [*by, *t.added]
    labels = [baseline.label, reference.label]
    fam = families.family(q, family, "gap", labels, correction) if family else None
    out = baseline_gap.gap_closure(
        t.seeds,
        by,
        baseline.label,
        reference.label,
        confidence=confidence,
        goal=goal,
        alpha=alpha,
        correction=correction,
        pooled_variance=pooled_variance,
        adjust=fam,
    )
    n_tests = int(out.attrs["n_tests"])  # baseline vs reference counted once
    out = out.merge(t.table[[*by, ARM, *t.over]], on=[*by, ARM], how="left")
    notes = [*t.notes, *baseline_gap.notes(confidence, alpha, correction, n_tests)]
    notes += [fam.note(str(family))] if fam else []
    counts = out.groupby(list(by))["n"].nunique() if by else pd.Series([out["n"].nunique()])
    notes += [UNEQUAL_N] if (counts > 1).any() else []
    notes += [pooled.NOTE] if pooled_variance else []
    return Answer(table=out, notes=notes + beaten_reference(out, by, reference.label, goal))


def beaten_reference(
    table: pd.DataFrame, by: Sequence[str], reference: str, goal: Goal
) -> list[str]:
    """Notes for cells where another arm's mean beats the reference's: the baseline-reference
    gap is then not the gap between the baseline and the best arm."""
    out = []
    for key, cell in iter_cells(table, by):
        ref = cell[cell[ARM] == reference]["mean"]
        if ref.empty:
            continue
        sign = 1.0 if goal == "min" else -1.0
        for _, row in cell[sign * (cell["mean"] - ref.iloc[0]) < 0].iterrows():
            where = ", ".join(f"{k}={v}" for k, v in key.items())
            out.append(
                f"{row[ARM]} beats the reference {reference}{f' at {where}' if where else ''} "
                f"(closure {row['closure_pct']:.4g}%, vs_reference: {row['vs_reference']}): "
                "the baseline-reference gap is not the gap to the best arm"
            )
    return out
