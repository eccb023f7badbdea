"""Downstream evaluations on this machine (``harness eval --launcher local``): the runs one
after another in this process, each on every core (lm-eval batches a run's requests)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.launch.evals import EvalJob, EvalSpec, evaluate_run
from harness.launch.profile import LauncherProfile


def run_evals(
    profile: LauncherProfile[Any], spec: EvalSpec, jobs: Sequence[EvalJob], wait: bool | None
) -> int:
    """Evaluate each job's run on its tasks, in order (local runs always wait); returns the
    (run, task) pairs evaluated."""
    return sum(evaluate_run(spec, job) for job in jobs)
