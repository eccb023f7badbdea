"""Which direction is better for a metric: declared in :mod:`harness.metrics.catalogue`, or
given with ``--goal``."""

from __future__ import annotations

from harness.core.errors import UserError
from harness.metrics.catalogue import DEFAULT_METRIC, METRICS, Goal

GOALS = ("auto", *(g.value for g in Goal))
"""The choices of ``--goal``."""

__all__ = [
    "DEFAULT_METRIC",
    "GOALS",
    "GOAL_HELP",
    "LOSSES",
    "NO_DIRECTION",
    "default_select",
    "metric_goal",
    "worst",
]

NO_DIRECTION = tuple(name for name, m in METRICS.items() if m.goal is None)
"""Declared metrics with no better direction: ``--goal`` is needed to analyse them."""

GOAL_HELP = (
    "Is lower (min) or higher (max) better; auto knows the declared metrics. Needed (min or "
    f"max) for a metric of no declared direction: {', '.join(NO_DIRECTION)}, or an undeclared "
    "column."
)
"""The help of every ``--goal`` option."""

LOSSES = ("val_loss", "val_ppl")
"""The grid's loss: the metrics that select configurations by default."""


def default_select(metric: str) -> str:
    """The metric that picks each cell's best configuration when ``--select-by`` is not given:
    the grid's loss, ``metric`` itself when it is one (``val_ppl``), else ``val_loss`` (an
    embedding metric is reported at the loss-best configuration, as the paper does)."""
    return metric if metric in LOSSES else "val_loss"


def metric_goal(metric: str, goal: str = "auto", flag: str = "--metric") -> str:
    """``min`` or ``max`` for ``metric``: ``goal`` when given, else the declared direction.

    Raises:
        UserError: ``goal`` is not a valid choice, or it is ``auto`` for a metric of unknown
            direction.
    """
    if goal not in GOALS:
        raise UserError(f"unknown --goal {goal!r}; valid choices: {', '.join(GOALS)}")
    if goal != "auto":
        return goal
    declared = METRICS.get(metric)
    if declared is None or declared.goal is None:
        fix = (
            "pass --goal min (lower is better) or --goal max (higher is better)"
            if flag == "--metric"
            else "select by a metric with a known direction, e.g. --select-by val_loss"
        )
        who = f"metric {metric!r}" if flag == "--metric" else f"{flag} {metric!r}"
        raise UserError(f"{who} has no known direction; {fix}")
    return declared.goal.value


def worst(goal: str) -> float:
    """The worst possible value under ``goal``: what a diverged run scores."""
    return float("inf") if goal == Goal.MIN else float("-inf")
