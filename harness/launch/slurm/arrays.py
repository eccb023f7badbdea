"""From runs to sbatch calls: packing runs into array tasks, the profile's sbatch parameters, and
one array submitted through submitit (its errors turned into one line with sbatch's reason)."""

from __future__ import annotations

import contextlib
import io
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import submitit
from submitit.core.utils import FailedJobError, FailedSubmissionError

from harness.core.config import RunConfig
from harness.core.errors import UserError
from harness.launch.profile import LauncherProfile
from harness.launch.slurm.resources import Request
from harness.launch.slurm.settings import SlurmSettings

BOOT = f"{shlex.quote(sys.executable)} -u -m harness.launch.slurm.boot"
"""How a task starts python: through :mod:`harness.launch.slurm.boot`, which then runs submitit."""


@dataclass(frozen=True, slots=True)
class TaskPlan:
    """One array task to be: its runs and how many processes it starts."""

    processes: int
    """Processes (SLURM tasks, DDP ranks) of each run: the runs' ``gpus_per_run``."""
    run_ids: tuple[str, ...]
    """Runs executed one after another in the task."""


def group_into_tasks(
    runs: Sequence[RunConfig], runs_per_task: int, families: Mapping[str, str] | None = None
) -> list[TaskPlan]:
    """Group runs by ``gpus_per_run`` (one sbatch shape each), ``runs_per_task`` per task. Runs
    of one family (``families``: run_id -> its branch parent's, :mod:`harness.launch.branching`)
    share a task, in their order (the parent first): a task holds whole families, up to
    ``runs_per_task`` runs unless one family alone has more."""
    fam = families or {}
    by_shape: dict[int, dict[str, list[str]]] = {}
    for r in runs:
        units = by_shape.setdefault(r.execution.gpus_per_run, {})
        units.setdefault(fam.get(r.run_id, r.run_id), []).append(r.run_id)
    per = max(1, runs_per_task)
    tasks: list[TaskPlan] = []
    for n, units in sorted(by_shape.items()):
        ids: list[str] = []
        for unit in units.values():
            if ids and len(ids) + len(unit) > per:
                tasks.append(TaskPlan(n, tuple(ids)))
                ids = []
            ids += unit
        if ids:
            tasks.append(TaskPlan(n, tuple(ids)))
    return tasks


def gpus_per_task(profile: LauncherProfile[SlurmSettings], processes: int) -> int:
    """GPUs a task of ``processes`` ranks asks for: one per rank on a GPU profile, else none.

    Raises:
        UserError: runs need more GPUs than the profile allows per task.
    """
    if profile.settings.gpus_per_node == 0:
        return 0
    if processes > profile.settings.gpus_per_node:
        raise UserError(
            f"launcher {profile.name!r}: runs with gpus_per_run: {processes} need {processes} GPUs "
            f"but the profile allows gpus_per_node: {profile.settings.gpus_per_node}; use a "
            f"profile with more GPUs per node (e.g. slurm-a100x8)"
        )
    return processes


def request(profile: LauncherProfile[SlurmSettings], processes: int) -> Request:
    """What one task of ``processes`` ranks asks of a node (for the sinfo check)."""
    mem = None if profile.settings.mem_gb is None else round(profile.settings.mem_gb * 1024)
    return Request(
        partition=profile.settings.partition,
        constraint=profile.settings.constraint,
        gpus=gpus_per_task(profile, processes),
        cpus=profile.settings.cpus_per_task * processes,
        mem_mb=mem,
    )


def executor_parameters(
    profile: LauncherProfile[SlurmSettings], processes: int, grid: str
) -> dict[str, object]:
    """submitit ``SlurmExecutor`` parameters (sbatch's names) for tasks of ``processes`` ranks."""
    params: dict[str, object] = {
        "job_name": f"harness-{grid}",
        "time": profile.settings.timeout_min,
        "nodes": 1,
        "ntasks_per_node": processes,
        "cpus_per_task": profile.settings.cpus_per_task,
        "array_parallelism": profile.settings.array_parallelism,
        "setup": list(profile.settings.setup),
        "stderr_to_stdout": False,
        "signal_delay_s": signal_delay_s(profile.settings.timeout_min),
    }
    optional = {
        "partition": profile.settings.partition,
        "account": profile.settings.account,
        "qos": profile.settings.qos,
        "constraint": profile.settings.constraint,
        "mem": None
        if profile.settings.mem_gb is None
        else f"{round(profile.settings.mem_gb * 1024)}M",
        "gpus_per_node": gpus_per_task(profile, processes) or None,
        "additional_parameters": dict(profile.settings.sbatch) or None,
    }
    params.update({k: v for k, v in optional.items() if v is not None})
    return params


def signal_delay_s(timeout_min: int) -> int:
    """Seconds before the time limit at which SLURM signals a task to checkpoint: submitit's 90,
    but never earlier than 10 s after the start (a 1-minute test limit gets its signal 10 to
    40 s in, as slurmctld checks limits every 30 s, rather than before the task has started)."""
    return max(10, min(90, timeout_min * 60 - 10))


def make_executor(
    profile: LauncherProfile[SlurmSettings], folder: Path, processes: int, grid: str
) -> submitit.SlurmExecutor:
    """A SlurmExecutor writing pickles and logs under ``folder/<array job id>/``.

    Raises:
        UserError: no SLURM here (srun missing), or the parameters are invalid.
    """
    try:
        executor = submitit.SlurmExecutor(
            folder=folder / "%A", max_num_timeout=profile.settings.max_num_timeout, python=BOOT
        )
    except RuntimeError as e:
        raise UserError(f"launcher {profile.name!r} needs SLURM on this machine: {e}") from None
    try:
        executor.update_parameters(**executor_parameters(profile, processes, grid))
    except ValueError as e:
        raise UserError(f"launcher {profile.name!r}: {str(e).splitlines()[0]}") from None
    return executor


def submit_array(
    executor: submitit.SlurmExecutor, tasks: Sequence[Callable[[], object]]
) -> tuple[str, bool]:
    """Submit ``tasks`` (callables) as one job array; returns (job id, whether an array).

    Raises:
        UserError: sbatch refused; the message is sbatch's reason. Nothing was queued.
    """
    indep = submitit.core.utils.JobPaths.get_first_id_independent_folder(executor.folder)
    before = set(indep.iterdir()) if indep.is_dir() else set()
    try:
        with contextlib.redirect_stderr(io.StringIO()):  # submitit echoes sbatch's stderr
            jobs = executor.submit_array(list(tasks))
    except (FailedJobError, FailedSubmissionError) as e:
        for leftover in (set(indep.iterdir()) if indep.is_dir() else set()) - before:
            if leftover.is_file() or leftover.is_symlink():
                leftover.unlink()
        raise UserError(f"sbatch refused the job: {sbatch_reason(str(e))}") from None
    first = jobs[0].job_id
    return first.split("_")[0], "_" in first


def sbatch_reason(stderr: str) -> str:
    """sbatch's error lines joined into one (``sbatch: error:`` prefixes dropped)."""
    lines = [ln.replace("sbatch: error:", "").strip() for ln in stderr.strip().splitlines()]
    return "; ".join(ln for ln in lines if ln) or "no reason given"
