"""Which direction is better for a metric: declared in :mod:`harness.metrics.catalogue`, or
given with ``--goal``."""

from __future__ import annotations

from harness.core.errors import UserError
from harness.metrics.catalogue import DEFAULT_METRIC, METRICS, Goal

GOALS = ("auto", *(g.value for g in Goal))
"""The choices of ``--goal``."""

__all__ = ["DEFAULT_METRIC", "GOALS", "metric_goal", "worst"]


def metric_goal(metric: str, goal: str = "auto") -> str:
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
        raise UserError(
            f"metric {metric!r} has no known direction; pass --goal min (lower is better) "
            "or --goal max (higher is better)"
        )
    return declared.goal.value


def worst(goal: str) -> float:
    """The worst possible value under ``goal``: what a diverged run scores."""
    return float("inf") if goal == Goal.MIN else float("-inf")
