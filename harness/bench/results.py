"""The bench's one door to the analysis: its rows, each arm's selection, its edges, all through
:mod:`harness.api`.

The selection is the one ``submit --confirm`` made (:func:`harness.api.cells` and
:func:`harness.api.tuned` over the tuning rows, by the grid's loss), so the verdict reports the
configurations that were confirmed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from harness import api
from harness.core.errors import UserError
from harness.metrics.catalogue import Goal

if TYPE_CHECKING:
    from harness.api import Tuned

LOSS = "val_loss"
"""The metric compared: the held-out loss at the end of the run (selection by it and by
perplexity, the planners' default, pick the same configurations: one is the other's log)."""
VALUE = "value"
"""Column of each row's metric (the worst value for a diverged run)."""
LR_EDGE = "lr_edge"
"""Column of :func:`selection`'s table: the side of the searched lrs the best sits on after
extension (empty when inside)."""


@dataclass(frozen=True, slots=True)
class Rows:
    """The bench's result rows, prepared."""

    metric: str
    """The metric compared (the grid's loss, read at the end of the run)."""
    goal: Goal
    """Which direction of ``metric`` is better."""
    tuning: pd.DataFrame
    """Tuning rows (extension rounds included), with ``value``."""
    confirm: pd.DataFrame
    """Confirmation rows, with ``value``."""
    keys: tuple[str, ...]
    """Columns that define an arm's cell (label, batch size, budget, ...)."""
    over: tuple[str, ...]
    """The tuned columns."""


def of_arms(labels: Sequence[str]) -> str:
    """The ``where`` filter (SQL) of the rows of the arms ``labels``."""
    quoted = ", ".join("'" + label.replace("'", "''") + "'" for label in labels)
    return f"label IN ({quoted})"


def load_rows(root: Path, grid: str, labels: Sequence[str]) -> Rows | None:
    """The rows of the arms ``labels`` in ``grid`` (None before the first result)."""
    try:
        found = api.rows(grid, results=root, scale="full", where=of_arms(labels), metric=LOSS)
    except UserError:  # no result yet
        return None
    rows = found.frame
    confirmed = rows["confirm"].fillna(False).astype(bool)
    tuning = rows[~confirmed]
    if tuning.empty:
        return None
    keys, over = api.cells(tuning)  # the arm's label is a key too (a cell is one arm's)
    return Rows(found.metric, found.goal, tuning, rows[confirmed], ("label", *keys), tuple(over))


def selection(rows: Rows) -> Tuned:
    """Each arm's selected configuration per cell: :attr:`~harness.api.Tuned.best` has one row
    per cell of ``rows.keys``, with ``mean`` (tuning seeds), ``configs``, ``runs``,
    ``diverged`` and :data:`LR_EDGE` (absent when lr is not tuned);
    :meth:`~harness.api.Tuned.line` gives the lr sensitivity."""
    return api.tuned(rows.tuning, rows.goal, keys=rows.keys, over=rows.over)
