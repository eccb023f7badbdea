"""Downstream evaluations on SLURM (``harness eval --launcher <slurm profile>``): one array
task per run, with the profile's resources (a GPU on a GPU profile), through submitit like the
training arrays (:mod:`harness.launch.slurm.arrays`). Logs go under the grid's SLURM folder."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import submitit

from harness.core import paths
from harness.core.env import wait_poll_s
from harness.core.errors import UserError
from harness.launch.evals import EvalJob, EvalSpec, evaluate_run
from harness.launch.profile import LauncherProfile
from harness.launch.slurm import arrays
from harness.launch.slurm.scheduler import (
    ACTIVE_STATES,
    SchedulerError,
    active_tasks,
    final_states,
)
from harness.launch.slurm.settings import SlurmSettings


@dataclass(frozen=True, slots=True)
class EvalTask:
    """One array task: evaluate one run on its tasks (picklable, for submitit)."""

    spec: EvalSpec
    """How runs are evaluated."""
    job: EvalJob
    """The run and its tasks."""

    def __call__(self) -> int:
        """The tasks written."""
        return evaluate_run(self.spec, self.job, submitit.JobEnvironment().job_id)


def run_evals(
    profile: LauncherProfile[SlurmSettings],
    spec: EvalSpec,
    jobs: Sequence[EvalJob],
    wait: bool | None,
) -> int | None:
    """Submit one array of ``jobs``; with ``wait``, block until every task ends. Returns the
    (run, task) pairs planned once they are done; None when queued (no ``wait``).

    Raises:
        UserError: sbatch refused (its reason), no SLURM here, or a task failed (its log named).
    """
    folder = paths.slurm_logs_dir(spec.results_root, spec.grid).resolve()
    executor = arrays.make_executor(profile, folder, 1, spec.grid)
    executor.update_parameters(job_name=f"harness-eval-{spec.grid}")
    task_spec = replace(spec, threads=profile.settings.cpus_per_task)
    job_id, _ = arrays.submit_array(executor, [EvalTask(task_spec, j) for j in jobs])
    print(f"queued {len(jobs)} runs' evaluations as array job {job_id}; logs under {folder}")
    if not wait:
        return None
    _wait(job_id, folder)
    return sum(len(j.tasks) for j in jobs)


POLL_S = 2.0
"""Seconds between looks at the array's tasks, unless ``HARNESS_WAIT_POLL_S`` says otherwise
(:func:`harness.core.env.wait_poll_s`)."""


def _wait(job_id: str, folder: Path, poll_s: float | None = None) -> None:
    """Block until array ``job_id`` has no task queued or running (sacct lags a task's end by
    a few seconds: until every task has a final state).

    Raises:
        UserError: a task ended other than COMPLETED (its log folder named).
    """
    poll = wait_poll_s(POLL_S) if poll_s is None else poll_s
    try:
        while True:
            states = final_states([job_id])
            if (
                not active_tasks([job_id])
                and states
                and all(s not in ACTIVE_STATES for s, _ in states.values())
            ):
                break
            time.sleep(poll)
    except SchedulerError as e:
        raise UserError(f"cannot follow evaluation job {job_id}: {e}") from None
    bad = sorted(f"{t} {s}" for t, (s, _) in states.items() if s != "COMPLETED")
    if bad:
        raise UserError(
            f"evaluation tasks ended badly: {', '.join(bad)}; logs under {folder / job_id}"
        )
