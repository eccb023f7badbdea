"""Which metric a command analyses, which direction is better, and which metric picks each
cell's configuration: decided once per command and handed on as one typed value.

``harness analyze``, ``harness figures`` and ``harness report`` all call :func:`choose_metric`
on the rows they read, so the default metric falls back the same way everywhere (``val_ppl``
becomes ``val_loss`` on a workload grid, whose rows have no perplexity).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from harness.analysis.rows.direction import DEFAULT_METRIC, GoalChoice, default_select, metric_goal
from harness.analysis.rows.preparation import resolve_metric
from harness.metrics.catalogue import Goal


@dataclass(frozen=True, slots=True)
class MetricChoice:
    """The metric analysed and the one selecting configurations, with their directions."""

    metric: str
    """The column analysed (``--metric``, after the workload fallback)."""
    goal: Goal
    """Which direction of ``metric`` is better (``--goal``, else the declared one)."""
    select_by: str
    """The metric whose mean over seeds picks each cell's configuration (``--select-by``, else
    the grid's loss: :func:`~harness.analysis.rows.direction.default_select`)."""
    select_goal: Goal
    """Which direction of ``select_by`` is better."""
    notes: tuple[str, ...] = ()
    """Why the metric is not the one asked for (the workload fallback), for the reader."""


def choose_metric(
    runs: pd.DataFrame,
    metric: str = DEFAULT_METRIC,
    goal: GoalChoice = "auto",
    select_by: str | None = None,
) -> MetricChoice:
    """The :class:`MetricChoice` of ``--metric``, ``--goal`` and ``--select-by`` over ``runs``.

    Raises:
        UserError: ``goal`` is not a valid choice, or a metric of unknown direction without one.
    """
    metric, said = resolve_metric(runs, metric)
    chosen_goal = metric_goal(metric, goal)
    chosen = select_by or default_select(metric)
    select_goal = chosen_goal if chosen == metric else metric_goal(chosen, "auto", "--select-by")
    return MetricChoice(metric, chosen_goal, chosen, select_goal, tuple(said))
