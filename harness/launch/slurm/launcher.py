"""The SLURM launcher: runs as job arrays through submitit, fire and forget.

``launch`` packs runs into array tasks (``runs_per_task``, trained ``runs_per_device`` at once on
a one-GPU task; runs with ``gpus_per_run: N`` get N processes per task), checks the request
against the cluster's nodes (sinfo), splits the tasks into arrays of at most ``MaxArraySize`` and
submits no more than ``MaxJobCount`` leaves room for (the rest is deferred: submit again later,
or ``--wait`` submits it as room frees up). Every
accepted array is recorded under ``results/<grid>/submissions/records/`` at once; re-submitting
skips runs with a result or a queued task (the backend's queue, :mod:`harness.launch.slurm.queue`),
and ``reconcile`` gives runs whose job died without a row their status from sacct. Each task is
handed the row of each of its runs as ``submit`` saw it (``seen``), and skips a run that has a
newer row from any job, or whose run lock another process holds, just before training it
(:mod:`harness.launch.slurm.task`).

Checkpoint cadence and retention come from the :class:`~harness.launch.contract.ExecutionSpec`
every task is handed (the profile's values, or the ``HARNESS_*`` overrides of one submission).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.core import paths
from harness.core.config import RunConfig
from harness.core.errors import UserError
from harness.launch import branching
from harness.launch.contract import ExecutionSpec, Launched, LaunchReport, Seen
from harness.launch.profile import LauncherProfile
from harness.launch.slurm import arrays
from harness.launch.slurm.limits import ClusterLimits, array_sizes, cluster_limits
from harness.launch.slurm.records import (
    Submission,
    now_iso,
    write_submission,
)
from harness.launch.slurm.resources import check_fits, read_nodes
from harness.launch.slurm.scheduler import SchedulerError, jobs_in_controller
from harness.launch.slurm.settings import SlurmSettings

if TYPE_CHECKING:
    import submitit

    from harness.launch.slurm.task import RunTask  # torch, via the training loop it calls

DRY_RUN_SCONTROL_TIMEOUT_S = 1.0
"""Longest wait for ``scontrol show config`` in a dry run (then Slurm's defaults are assumed)."""


@dataclass(frozen=True, slots=True)
class Queued:
    """What :meth:`SlurmLauncher.launch` queued (the handle of its ``Launched``)."""

    submissions: tuple[Submission, ...]
    """The accepted arrays, recorded."""
    deferred: tuple[arrays.TaskPlan, ...]
    """Tasks that did not fit under ``MaxJobCount`` (``wait`` submits them as room frees up)."""
    seen: Seen
    """Each run's rows as ``submit`` saw them (handed to the deferred tasks too)."""


class SlurmLauncher:
    """Submits runs as SLURM job arrays; see the module docstring."""

    detaches = True
    """Queued runs go on without this process: waiting is optional."""

    def __init__(
        self, profile: LauncherProfile[SlurmSettings], limits: ClusterLimits | None = None
    ) -> None:
        """``limits`` overrides the controller's (tests use it to force several arrays)."""
        if not isinstance(profile.settings, SlurmSettings):
            raise TypeError(f"profile {profile.name!r} is not a SLURM profile")
        self.profile = profile
        self.settings: SlurmSettings = profile.settings
        self._limits = limits

    def limits(self, timeout_s: float = 10.0) -> ClusterLimits:
        """The array limits in force (the controller's, cached)."""
        return self._limits or cluster_limits(timeout_s)

    # --- planning ----------------------------------------------------------------------------
    def plan(self, runs: Sequence[RunConfig]) -> str:
        """The dry-run summary: array tasks and ``sbatch calls: N`` (no squeue, no sbatch)."""
        tasks = arrays.group_into_tasks(runs, self.settings.runs_per_task)
        limits = self.limits(DRY_RUN_SCONTROL_TIMEOUT_S)
        shapes = sorted({t.processes for t in tasks})
        calls = sum(
            len(array_sizes(sum(1 for t in tasks if t.processes == n), limits.max_array_size))
            for n in shapes
        )
        lines = [
            f"slurm launcher {self.profile.name!r}: {len(runs)} runs in {len(tasks)} array tasks "
            f"({self.settings.runs_per_task} runs per task, {self.settings.runs_per_device} at "
            f"once on a one-GPU task; processes per task: {', '.join(map(str, shapes)) or '-'})",
            f"sbatch calls: {calls} (arrays of at most {limits.max_array_size} tasks; "
            f"MaxArraySize {limits.max_array_size}, MaxJobCount {limits.max_job_count}: "
            f"{limits.source})",
        ]
        if len(tasks) > limits.max_job_count:
            lines.append(
                f"note: {len(tasks)} tasks exceed MaxJobCount; submit queues what fits and defers "
                "the rest (pack runs with runs_per_task to need fewer tasks)"
            )
        return "\n".join(lines)

    # --- rows for ended jobs ------------------------------------------------------------------
    def reconcile(self, root: Path, grid: str) -> dict[str, str]:
        """Rows for runs whose job ended without one (see ``harness.launch.slurm.reconcile``)."""
        from harness.launch.slurm.reconcile import reconcile  # DuckDB: imported when used

        try:
            return reconcile(root, grid)
        except SchedulerError as e:
            raise UserError(f"cannot read the state of {grid!r}'s jobs: {e}") from None

    # --- submitting --------------------------------------------------------------------------
    def launch(
        self, runs: Sequence[RunConfig], spec: ExecutionSpec, seen: Seen | None = None
    ) -> Launched:
        """Submit ``runs`` as job arrays (what the controller has no room for is deferred).
        Each task is handed ``seen`` for its runs: it skips a run whose row changed since.

        Raises:
            UserError: impossible request, sbatch refused (its reason), no SLURM here.
        """
        families = branching.families(spec.results_root, spec.grid)  # one task per family
        tasks = arrays.group_into_tasks(runs, self.settings.runs_per_task, families)
        self._check_resources(tasks)
        limits = self.limits()
        room = self.room(limits)
        submitted, deferred = tasks[:room], tasks[room:]
        seen = dict(seen or {})
        subs = self.submit_tasks(submitted, spec, limits, seen)
        launched = sum(len(t.run_ids) for t in submitted)
        jobs = ", ".join(s.job_id for s in subs)
        logs = paths.slurm_logs_dir(spec.results_root, spec.grid)
        print(
            f"queued {launched} runs as {len(submitted)} array tasks in {len(subs)} sbatch "
            f"calls (jobs {jobs or '-'}); logs under {logs}"
        )
        if deferred:
            print(
                f"deferred {sum(len(t.run_ids) for t in deferred)} runs: the controller holds at "
                f"most {limits.max_job_count} jobs (MaxJobCount); submit again when it has room"
            )
        return Launched(launched, Queued(tuple(subs), tuple(deferred), seen))

    def wait(
        self, launched: Launched, spec: ExecutionSpec, *, show_progress: bool = True
    ) -> LaunchReport:
        """Follow the queued runs until each has its row, submitting deferred tasks as the
        controller gets room (see :mod:`harness.launch.slurm.waiting`)."""
        from harness.launch.slurm.waiting import wait_for_runs

        queued: Queued = launched.handle

        def top_up(deferred: Sequence[arrays.TaskPlan]) -> tuple[list[Submission], int]:
            limits = self.limits()
            room = self.room(limits)
            if room <= 0:
                return [], room
            return self.submit_tasks(deferred[:room], spec, limits, queued.seen), room

        statuses, late = wait_for_runs(
            spec.results_root,
            spec.grid,
            queued.submissions,
            queued.deferred,
            top_up,
            show_progress,
        )
        return LaunchReport(launched=launched.runs + late, statuses=statuses)

    def submit_tasks(
        self,
        tasks: Sequence[arrays.TaskPlan],
        spec: ExecutionSpec,
        limits: ClusterLimits,
        seen: Seen | None = None,
    ) -> list[Submission]:
        """Submit ``tasks`` in arrays of at most ``MaxArraySize``; records each accepted array.
        ``seen``: each run's rows as ``submit`` saw them (:meth:`launch`)."""
        folder = (paths.slurm_logs_dir(spec.results_root, spec.grid)).resolve()
        subs: list[Submission] = []
        for processes in sorted({t.processes for t in tasks}):
            shape = [t for t in tasks if t.processes == processes]
            executor = arrays.make_executor(self.profile, folder, processes, spec.grid)
            start = 0
            for size in array_sizes(len(shape), limits.max_array_size):
                chunk = shape[start : start + size]
                start += size
                try:
                    subs.append(self._submit_chunk(executor, chunk, spec, folder, seen or {}))
                except UserError as e:
                    done = sum(len(t) for s in subs for t in s.tasks)  # t: a task's run_ids
                    raise UserError(
                        f"launcher {self.profile.name!r}: {e}; nothing of this array was queued"
                        + (f" ({done} runs queued before it are recorded)" if subs else "")
                    ) from None
        return subs

    def _submit_chunk(
        self,
        executor: submitit.SlurmExecutor,
        chunk: Sequence[arrays.TaskPlan],
        spec: ExecutionSpec,
        folder: Path,
        seen: Seen,
    ) -> Submission:
        task_spec = spec.with_threads(self.settings.cpus_per_task)
        callables = [self._task(task_spec, t, seen) for t in chunk]
        job_id, is_array = arrays.submit_array(executor, callables)
        sub = Submission(
            job_id=job_id,
            array=is_array,
            tasks=tuple(t.run_ids for t in chunk),
            submitted_at=now_iso(),
            launcher=self.profile.name,
            log_dir=str(folder / job_id),
        )
        write_submission(spec.results_root, spec.grid, sub)
        return sub

    def _task(self, spec: ExecutionSpec, plan: arrays.TaskPlan, seen: Seen) -> RunTask:
        """The callable of one array task, handed what ``submit`` saw of its runs' rows."""
        from harness.launch.slurm.task import RunTask

        runs_seen = {r: seen[r] for r in plan.run_ids if r in seen}
        return RunTask(spec, plan.run_ids, self.settings.per_device(plan.processes), runs_seen)

    def _check_resources(self, tasks: Sequence[arrays.TaskPlan]) -> None:
        nodes = read_nodes()
        for processes in sorted({t.processes for t in tasks}):
            req = arrays.request(self.profile, processes)
            if nodes:
                check_fits(req, nodes, self.profile.name)

    def room(self, limits: ClusterLimits) -> int:
        """Array tasks the controller can take now under ``MaxJobCount``."""
        try:
            held = jobs_in_controller()
        except SchedulerError as e:
            raise UserError(f"launcher {self.profile.name!r}: {e}") from None
        return max(0, limits.max_job_count - held)
