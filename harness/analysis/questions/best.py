"""``harness analyze best``: each cell's best configuration, with its seed statistics."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pandas as pd

from harness.analysis.questions.answer import Answer
from harness.analysis.questions.query import Query, load, tuned
from harness.analysis.rows.arm_labels import add_methods
from harness.analysis.rows.axes import check_columns, varying_within
from harness.analysis.rows.conditions import METHOD_COLUMNS
from harness.analysis.stats import ARM, METHOD
from harness.analysis.stats.defaults import CONFIDENCE


def answer(
    q: Query, *, by: Sequence[str] = (), over: Sequence[str] = (), pooled_variance: bool = False
) -> Answer:
    """``analyze best``: each cell's best configuration, with its seed statistics. Where
    several methods (the arms of ``profiles``: a run's label, else its optimizer and variant)
    share a cell of ``by``, the method is the arm, a column of its own: what differs with it
    alone (each arm's own run length) is no cell."""
    prep, goal = load(q, named=[*by, *over])  # reads no other column: the rest not read
    keys = list(by)
    check_columns(prep.rows, [k for k in keys if k != ARM], "--by")
    rows = add_methods(prep.rows)
    if METHOD not in keys and varying_within(rows, [k for k in keys if k != ARM], [METHOD]):
        prep = dataclasses.replace(prep, rows=rows)
        keys = [METHOD, *keys]
    t = tuned(prep, goal, keys, over)
    notes = [*t.notes, *_single_arm_note(rows, [k for k in t.keys if k != METHOD])]
    t = dataclasses.replace(t, notes=notes)
    if not pooled_variance:
        return Answer(table=t.table, notes=t.notes)
    from harness.analysis.stats import pooled  # scipy: only for pooled intervals

    within = [c for c in (ARM, METHOD) if c in keys]
    table = pooled.mean_intervals(t.table, t.seeds, keys, within, CONFIDENCE)
    return Answer(table=table, notes=[*t.notes, pooled.NOTE])


def _single_arm_note(rows: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    """A note when several methods ran but every cell of ``keys`` holds one: the table then
    compares nothing (the cells are each arm's own choices, such as its run length)."""
    if not keys or rows[METHOD].nunique() < 2 or set(keys) & {*METHOD_COLUMNS, ARM}:
        return []  # the arms are cells by request (--by optimizer)
    if int(rows.groupby(list(keys), dropna=False)[METHOD].nunique().max()) > 1:
        return []
    return [
        f"every cell of {', '.join(keys)} holds a single arm: the table compares no arms "
        "(drop those --by columns to compare them)"
    ]
