"""``harness analyze profiles``: AlgoPerf-style performance profiles of the arms."""

from __future__ import annotations

from collections.abc import Sequence

from harness.analysis.questions.answer import Answer
from harness.analysis.questions.target_query import TargetQuery, profile_table, runs
from harness.analysis.stats import performance_profiles
from harness.analysis.stats.defaults import Measure
from harness.analysis.stats.frame import METHOD
from harness.analysis.stats.to_target import MEASURES
from harness.core.errors import UserError, unknown_choice


def answer(
    q: TargetQuery,
    *,
    by: Sequence[str] = (),
    over: Sequence[str] = (),
    measure: Measure = "tokens",
    tau_max: float = performance_profiles.TAU_MAX,
) -> Answer:
    """``analyze profiles``: each arm's rho(tau) at a few taus and its score (area up to
    ``tau_max``), over the cells of ``by`` (default: the conditions that vary)."""
    if measure not in MEASURES:
        raise unknown_choice("--measure", measure, MEASURES)
    if not tau_max > 1:
        raise UserError(f"--tau-max {tau_max}: must be greater than 1")
    _, rows, _, notes = runs(q)
    table, keys = profile_table(rows, by, over, MEASURES[measure], q.pool)
    taus = sorted({t for t in performance_profiles.TABLE_TAUS if t <= tau_max} | {tau_max})
    curve = performance_profiles.rho(table, taus).pivot(index=METHOD, columns="tau", values="rho")
    curve.columns = [f"rho({t:g})" for t in curve.columns]
    out = curve.join(performance_profiles.score(table, tau_max)).reset_index()
    reached = table.groupby(METHOD)[performance_profiles.RATIO].apply(
        lambda r: int(r.lt(float("inf")).sum())
    )
    out.insert(1, "cells", len(table) // max(1, table[METHOD].nunique()))
    out.insert(2, "reached", out[METHOD].map(reached))
    notes += [
        f"cells: {', '.join(keys) or 'one cell (no condition varies)'}; arm: method; "
        f"{measure}-to-target, median over seeds, fastest configuration",
        f"score: area under rho on [1, {tau_max:g}] / {tau_max - 1:g}",
    ]
    return Answer(table=out.sort_values("score", ascending=False, kind="stable"), notes=notes)
