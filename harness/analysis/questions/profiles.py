"""``harness analyze profiles``: AlgoPerf-style performance profiles of the arms."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from harness.analysis.questions.answer import Answer
from harness.analysis.questions.target_query import (
    TargetQuery,
    own_lengths,
    profile_table,
    runs,
)
from harness.analysis.questions.targets import device_notes
from harness.analysis.rows.arm_labels import short
from harness.analysis.stats import METHOD, performance_profiles
from harness.analysis.stats.reaching import LEFT_CENSORED, MEASURES, Crossing
from harness.core.errors import UserError, unknown_choice

#: Cells listed as columns (time and ratio per cell) at most; more are in ``analyze targets``.
MAX_CELL_COLUMNS = 6


def answer(
    q: TargetQuery,
    *,
    by: Sequence[str] = (),
    over: Sequence[str] = (),
    measure: str = "tokens",
    tau_max: float = performance_profiles.TAU_MAX,
    crossing: Crossing = "interpolated",
) -> Answer:
    """``analyze profiles``: each arm's time to target and ratio to the best per cell, its
    rho(tau) at a few taus and its score (area up to ``tau_max``), over the cells of ``by``
    (default: the conditions that vary, but each arm's own run length)."""
    if measure not in MEASURES:
        raise unknown_choice("--measure", measure, MEASURES)
    if not tau_max > 1:
        raise UserError(f"--tau-max {tau_max}: must be greater than 1")
    _, rows, _, notes = runs(q, crossing)
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
    out = _with_cell_times(out, table, keys, MEASURES[measure])
    flagged = rows.groupby(METHOD)[LEFT_CENSORED].sum()
    out.insert(3, LEFT_CENSORED, out[METHOD].map(flagged).fillna(0).astype(int))
    own = own_lengths(rows, by)
    notes += [
        f"cells: {', '.join(keys) or 'one cell (no condition varies)'}; arm: method"
        + (f"; run length ({', '.join(own)}) is each arm's own, not a cell" if own else "")
        + f"; {measure}-to-target, median over seeds, fastest configuration",
        f"ratio: the arm's {measure}-to-target over the best arm's in the cell; "
        f"score: area under rho on [1, {tau_max:g}] / {tau_max - 1:g}",
    ]
    notes += device_notes(rows) if measure == "time" else []
    return Answer(table=out.sort_values("score", ascending=False, kind="stable"), notes=notes)


def _with_cell_times(
    out: pd.DataFrame, table: pd.DataFrame, keys: Sequence[str], measure: str
) -> pd.DataFrame:
    """``out`` with each arm's time to target and ratio to the best per cell (columns
    ``<measure>`` and ``ratio``, or ``<measure> [cell]``/``ratio [cell]`` for several cells)."""
    cells = table[list(keys)].drop_duplicates() if keys else pd.DataFrame(index=[0])
    if len(cells) > MAX_CELL_COLUMNS:
        return out
    for _, cell in cells.iterrows():
        part = table
        for k in keys:
            part = part[part[k] == cell[k]]
        name = " ".join(f"{k}={short(cell[k])}" for k in keys)
        suffix = f" [{name}]" if name else ""
        per = part.set_index(METHOD)
        out[f"{measure}{suffix}"] = out[METHOD].map(per[performance_profiles.TIME])
        out[f"ratio{suffix}"] = out[METHOD].map(per[performance_profiles.RATIO])
    return out
