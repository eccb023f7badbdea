"""The bench's one door to the analysis layer: its rows, each arm's selection, its edges.

The selection is the one ``submit --confirm`` made (:func:`harness.followup.planning.cells` and
:func:`harness.analysis.rows.tuning.tune` over the tuning rows, by the grid's loss), so the verdict
reports the configurations that were confirmed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from harness.core.errors import UserError
from harness.metrics.catalogue import Goal

LOSS = "val_loss"
"""The metric compared: the held-out loss at the end of the run (selection by it and by
perplexity, the planners' default, pick the same configurations: one is the other's log)."""
VALUE = "value"
"""Column of each row's metric (the worst value for a diverged run)."""


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


def load_rows(root: Path, grid: str, labels: Sequence[str]) -> Rows | None:
    """The rows of the arms ``labels`` in ``grid`` (None before the first result)."""
    from harness.analysis.rows.direction import metric_goal
    from harness.analysis.rows.load import select
    from harness.analysis.rows.preparation import prepare, resolve_metric
    from harness.followup.planning import cells

    try:
        df = select(grid, results=root, scale="full").frame("runs")
    except UserError:
        return None
    df = df[df["label"].isin(list(labels))]
    if df.empty:
        return None
    metric = resolve_metric(df, LOSS)[0]
    goal = metric_goal(metric)
    rows = prepare(df, metric, goal).rows
    confirmed = rows["confirm"].fillna(False).astype(bool)
    tuning = rows[~confirmed]
    if tuning.empty:
        return None
    keys, over = cells(tuning)  # the arm's label is a key too (a cell is one arm's)
    return Rows(metric, goal, tuning, rows[confirmed], ("label", *keys), tuple(over))


def best_configs(rows: Rows) -> pd.DataFrame:
    """Each arm's selected configuration per cell (one row per cell of ``rows.keys``), with
    ``mean`` (tuning seeds), ``configs``, ``runs``, ``diverged`` and ``lr_edge``: the side of
    the searched lrs the best sits on after extension (empty when inside)."""
    from harness.analysis.rows.edges import open_edge
    from harness.analysis.rows.tuning import line_values, tune

    keys, over = list(rows.keys), list(rows.over)
    table = tune(rows.tuning, keys, over, rows.goal)
    edges = []
    for _, best in table.iterrows():
        cell = _matching(rows.tuning, best, keys)
        edge = (
            open_edge("lr", line_values(cell, best, over, "lr"), best["lr"])
            if "lr" in over
            else None
        )
        edges.append("" if edge is None else edge.side)
    return table.assign(lr_edge=edges)


def lr_line(rows: Rows, best: pd.Series) -> pd.DataFrame:
    """The tuning means along the lr line through ``best`` in its cell: columns lr, mean."""
    from harness.analysis.rows.tuning import line_values

    keys, over = list(rows.keys), list(rows.over)
    cell = _matching(rows.tuning, best, keys)
    lrs = line_values(cell, best, over, "lr")
    held = [c for c in over if c != "lr"]
    line = _matching(cell, best, held)
    line = line[line["lr"].isin(lrs)]
    return line.groupby("lr", as_index=False).agg(mean=(VALUE, "mean"))


def _matching(rows: pd.DataFrame, best: pd.Series, columns: Sequence[str]) -> pd.DataFrame:
    """Rows equal to ``best`` on ``columns`` (NULL matches NULL)."""
    mask = pd.Series(True, index=rows.index)
    for c in columns:
        v = best[c]
        null = v is None or (pd.api.types.is_scalar(v) and pd.isna(v))
        mask &= rows[c].isna() if null else rows[c] == v
    return rows[mask]
