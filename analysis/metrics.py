"""Which direction is better for each metric column."""

from __future__ import annotations

from harness.errors import UserError

#: Metric column -> ``min`` (lower is better) or ``max`` (higher is better).
METRIC_GOALS: dict[str, str] = {
    "val_ppl": "min",
    "val_loss": "min",
    "train_loss": "min",
    "iso": "max",
    "mu_norm": "min",
    "mu_norm_ratio": "min",
    "rho": "max",
    "kappa": "max",
    "head_iso": "max",
    "head_mu_norm": "min",
    "head_mu_norm_ratio": "min",
    "head_rho": "max",
    "head_kappa": "max",
    "v_unigram_r2": "max",
    "wall_s": "min",
    "tokens_per_s": "max",
    "mfu": "max",
    "peak_mem_gb": "min",
    "compile_s": "min",
    "data_wait_s": "min",
    "optimizer_step_frac": "min",
}

#: The choices of ``--goal``.
GOALS = ("auto", "min", "max")

DEFAULT_METRIC = "val_ppl"


def metric_goal(metric: str, goal: str = "auto") -> str:
    """``min`` or ``max`` for ``metric``: ``goal`` when given, else the known direction.

    Raises:
        UserError: ``goal`` is not a valid choice, or it is ``auto`` for a metric of unknown
            direction.
    """
    if goal not in GOALS:
        raise UserError(f"unknown --goal {goal!r}; valid choices: {', '.join(GOALS)}")
    if goal != "auto":
        return goal
    if metric not in METRIC_GOALS:
        raise UserError(
            f"metric {metric!r} has no known direction; pass --goal min (lower is better) "
            "or --goal max (higher is better)"
        )
    return METRIC_GOALS[metric]


def worst(goal: str) -> float:
    """The worst possible value under ``goal``: what a diverged run scores."""
    return float("inf") if goal == "min" else float("-inf")
