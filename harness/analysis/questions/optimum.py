"""``analyze optimum``: each cell's fitted optimum of a tuned axis and the metric there.

The statistics are in :mod:`harness.analysis.stats.optimum_fit` (quadratic in log axis around the
best points; Fieller's interval for the optimum, Welch's for the metric there).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from harness.analysis.questions.answer import Answer
from harness.analysis.questions.query import Query, load, tuned
from harness.analysis.stats import CONFIDENCE, METHODS, optimum_table
from harness.analysis.stats.optimum_fit import WINDOW
from harness.core.errors import UserError


def answer(
    q: Query,
    *,
    by: Sequence[str],
    over: Sequence[str],
    axis: str = "lr",
    confidence: float = CONFIDENCE,
) -> Answer:
    """``analyze optimum``."""
    prep, goal = load(q)
    rows = prep.rows
    if axis not in rows.columns or not pd.api.types.is_numeric_dtype(rows[axis]):
        raise UserError(f"--axis {axis!r}: not a numeric column of the runs")
    if (rows[axis].dropna() <= 0).any():
        raise UserError(f"--axis {axis!r}: the fit is in log({axis}), which needs values > 0")
    cells = list(by)
    if "optimizer" not in cells and rows["optimizer"].nunique() > 1:
        cells.append("optimizer")
    others = [c for c in over if c != axis]
    if axis in cells:
        raise UserError(f"--axis {axis!r} is also in --by")
    t = tuned(prep, goal, [*cells, axis], others)
    out = optimum_table(t.table, [*cells, *t.added], axis, goal, confidence)
    notes = [
        *t.notes,
        f"fit: quadratic in log({axis}) through the best {axis} and up to {WINDOW} finite "
        "neighbours each side (points), of the means over seeds",
        f"optimum interval: {METHODS['ratio']}; metric interval: {METHODS['diff']} of the fit "
        f"at the optimum; {100 * confidence:g}%",
    ]
    return Answer(table=out, notes=notes)
