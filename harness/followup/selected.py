"""Each cell's selected configuration, as the follow-up planners select it.

A *cell* is a combination of the experiment columns that are not hyperparameters (optimizer,
batch size, budget, ...); the hyperparameters that vary inside one are *tuned*
(:func:`cells`). Each cell's best configuration is the one with the best mean over seeds
(:func:`harness.analysis.rows.tuning.tune`); ``submit --extend`` extends the tuned axes whose
best sits on an open edge, ``submit --confirm`` trains the best on fresh seeds, and
:func:`select` hands the same selection to a reader (``harness.api.tuned``): the best per cell,
the side of each tuned axis's searched values it sits on, and the line through it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import pandas as pd

from harness.analysis.rows.axes import experiment_columns, hyperparameters
from harness.analysis.rows.conditions import auto_over
from harness.analysis.rows.edges import open_edge
from harness.analysis.rows.tuning import line_values, tune
from harness.analysis.stats import VALUE
from harness.metrics.catalogue import Goal

EDGE_SUFFIX = "_edge"
"""Column ``<axis>_edge`` of :attr:`Tuned.best`: ``smallest``/``largest`` when the best value of
the tuned ``axis`` is the smallest or largest tried along the line through it (an open edge,
:func:`harness.analysis.rows.edges.open_edge`); empty when inside or on a natural bound."""


def cells(rows: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(cell keys, tuned columns) of the rows: the experiment columns that are not
    hyperparameters define a cell; the hyperparameters that vary inside one are tuned."""
    tuned = set(hyperparameters(rows))
    keys = [c for c in experiment_columns(rows) if c not in tuned]
    return keys, auto_over(rows, keys)


def is_null(v: object) -> bool:
    """Whether ``v`` is NULL (None or NaN)."""
    return v is None or bool(pd.api.types.is_scalar(v) and pd.isna(cast(Any, v)))


def matching(rows: pd.DataFrame, best: pd.Series, columns: Sequence[str]) -> pd.Series:
    """The mask of ``rows`` equal to ``best`` on ``columns`` (NULL matches NULL)."""
    mask = pd.Series(True, index=rows.index)
    for c in columns:
        mask &= rows[c].isna() if is_null(best[c]) else rows[c] == best[c]
    return mask


@dataclass(frozen=True, slots=True)
class Tuned:
    """Each cell's selected configuration over tuning rows (:func:`select`)."""

    keys: tuple[str, ...]
    """Columns that define a cell."""
    over: tuple[str, ...]
    """The tuned columns (hyperparameters that vary inside a cell)."""
    best: pd.DataFrame
    """One row per cell, sorted by ``keys``: the keys, the best ``over`` values, ``mean``,
    ``std``, ``n`` (seeds), ``configs`` (tried in the cell), ``runs``, ``diverged``, ``edge``
    (notes) and ``<axis>_edge`` per tuned axis (:data:`EDGE_SUFFIX`)."""
    rows: pd.DataFrame
    """The tuning rows selected from (one per run, with ``value``)."""

    def line(self, best: pd.Series, axis: str) -> pd.DataFrame:
        """The mean ``value`` over seeds of each ``axis`` value tried on the line through
        ``best`` (a row of :attr:`best`) in its cell, the other tuned columns held: columns
        ``axis`` and ``mean``, sorted by ``axis`` (the sensitivity to ``axis``)."""
        cell = self.rows[matching(self.rows, best, self.keys)]
        values = line_values(cell, best, self.over, axis)
        held = [c for c in self.over if c != axis]
        line = cell[matching(cell, best, held)]
        line = line[line[axis].isin(values)]
        return line.groupby(axis, as_index=False).agg(mean=(VALUE, "mean"))


def select(
    rows: pd.DataFrame,
    goal: Goal,
    keys: Sequence[str] | None = None,
    over: Sequence[str] | None = None,
) -> Tuned:
    """Each cell's best configuration over ``rows`` (prepared tuning rows, with ``value``).

    Args:
        rows: one row per tuning run (confirmation runs never select).
        goal: ``min`` or ``max`` for ``value``.
        keys: the columns that define a cell (None: as :func:`cells` finds them).
        over: the tuned columns (None: as :func:`cells` finds them).
    """
    found, tuned = cells(rows)
    by = list(found if keys is None else keys)
    over = list(tuned if over is None else over)
    table = tune(rows, by, over, goal)
    for axis in over:
        sides = []
        for _, best in table.iterrows():
            cell = rows[matching(rows, best, by)]
            edge = open_edge(axis, line_values(cell, best, over, axis), best[axis])
            sides.append("" if edge is None else edge.side)
        table[axis + EDGE_SUFFIX] = sides
    return Tuned(tuple(by), tuple(over), table, rows)
