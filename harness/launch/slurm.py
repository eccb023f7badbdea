"""The SLURM launcher: runs as job arrays through submitit, fire and forget.

``launch`` packs runs into array tasks (``runs_per_task``, trained ``runs_per_device`` at once on
a one-GPU task; runs with ``gpus_per_run: N`` get N processes per task), checks the request
against the cluster's nodes (sinfo), splits the tasks into arrays of at most ``MaxArraySize`` and
submits no more than ``MaxJobCount`` leaves room for (the rest is deferred: submit again later,
or ``--wait`` submits it as room frees up). Every
accepted array is recorded under ``results/<grid>/submissions/records/`` at once; re-submitting
skips runs with a result or a queued task (``exclude_queued``), and ``reconcile`` gives runs whose
job died without a row their status from sacct.

Checkpoint cadence and retention come from the profile (``checkpoint_every_s``,
``keep_checkpoints``); the environment variables ``HARNESS_CHECKPOINT_EVERY_S`` and
``HARNESS_KEEP_CHECKPOINTS=1`` override them for one submission.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from harness import paths
from harness.config import RunConfig
from harness.errors import UserError
from harness.launch import arrays
from harness.launch.profile import LauncherProfile
from harness.launch.records import (
    Submission,
    latest_placements,
    now_iso,
    read_submissions,
    write_submission,
)
from harness.launch.registry import LaunchReport
from harness.launch.resources import check_fits, read_nodes
from harness.launch.sbatch_limits import ClusterLimits, array_sizes, cluster_limits
from harness.launch.scheduler import SchedulerError, active_tasks, jobs_in_controller

CHECKPOINT_ENV = "HARNESS_CHECKPOINT_EVERY_S"
"""Environment variable overriding the profile's ``checkpoint_every_s``."""
KEEP_ENV = "HARNESS_KEEP_CHECKPOINTS"
"""Environment variable: ``1`` keeps a run's checkpoint after its row is written."""
DRY_RUN_SCONTROL_TIMEOUT_S = 1.0
"""Longest wait for ``scontrol show config`` in a dry run (then Slurm's defaults are assumed)."""


class SlurmLauncher:
    """Submits runs as SLURM job arrays; see the module docstring."""

    def __init__(self, profile: LauncherProfile, limits: ClusterLimits | None = None) -> None:
        """``limits`` overrides the controller's (tests use it to force several arrays)."""
        self.profile = profile
        self._limits = limits
        self.checkpoint_every_s = float(
            os.environ.get(CHECKPOINT_ENV) or profile.checkpoint_every_s
        )
        keep = os.environ.get(KEEP_ENV)
        self.keep_checkpoint = profile.keep_checkpoints if keep is None else keep in ("1", "true")

    def limits(self, timeout_s: float = 10.0) -> ClusterLimits:
        """The array limits in force (the controller's, cached)."""
        return self._limits or cluster_limits(timeout_s)

    # --- planning ----------------------------------------------------------------------------
    def plan(self, runs: Sequence[RunConfig]) -> str:
        """The dry-run summary: array tasks and ``sbatch calls: N`` (no squeue, no sbatch)."""
        tasks = arrays.pack(runs, self.profile.runs_per_task)
        limits = self.limits(DRY_RUN_SCONTROL_TIMEOUT_S)
        shapes = sorted({t.processes for t in tasks})
        calls = sum(
            len(array_sizes(sum(1 for t in tasks if t.processes == n), limits.max_array_size))
            for n in shapes
        )
        lines = [
            f"slurm launcher {self.profile.name!r}: {len(runs)} runs in {len(tasks)} array tasks "
            f"({self.profile.runs_per_task} runs per task, {self.profile.runs_per_device} at once "
            f"on a one-GPU task; processes per task: {', '.join(map(str, shapes)) or '-'})",
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

    # --- what is queued ----------------------------------------------------------------------
    def exclude_queued(self, root: Path, grid: str, runs: Sequence[RunConfig]) -> list[RunConfig]:
        """``runs`` minus those whose latest submitted task is still queued or running.

        Raises:
            UserError: squeue cannot answer (submitting then could duplicate runs).
        """
        placements = latest_placements(read_submissions(root, grid))
        mine = {r.run_id: placements[r.run_id] for r in runs if r.run_id in placements}
        if not mine:
            return list(runs)
        try:
            active = active_tasks({p.submission.job_id for p in mine.values()})
        except SchedulerError as e:
            raise UserError(f"cannot tell which runs of {grid!r} are queued: {e}") from None
        return [r for r in runs if r.run_id not in mine or mine[r.run_id].task not in active]

    def reconcile(self, root: Path, grid: str) -> dict[str, str]:
        """Rows for runs whose job ended without one (see ``harness.launch.reconcile``)."""
        from harness.launch.reconcile import reconcile  # DuckDB: imported when used

        try:
            return reconcile(root, grid)
        except SchedulerError as e:
            raise UserError(f"cannot read the state of {grid!r}'s jobs: {e}") from None

    # --- submitting --------------------------------------------------------------------------
    def launch(
        self,
        runs: Sequence[RunConfig],
        root: Path,
        grid: str,
        data_root: Path,
        *,
        wait: bool = False,
        show_progress: bool = True,
    ) -> LaunchReport:
        """Submit ``runs`` as job arrays; with ``wait``, block until they finish.

        Raises:
            UserError: impossible request, sbatch refused (its reason), no SLURM here.
        """
        tasks = arrays.pack(runs, self.profile.runs_per_task)
        self._check_resources(tasks)
        limits = self.limits()
        room = self._room(limits)
        submitted, deferred = tasks[:room], tasks[room:]
        subs = self.submit_tasks(submitted, root, grid, data_root, limits)
        launched = sum(len(t.run_ids) for t in submitted)
        jobs = ", ".join(s.job_id for s in subs)
        print(
            f"queued {launched} runs as {len(submitted)} array tasks in {len(subs)} sbatch "
            f"calls (jobs {jobs or '-'}); logs under {paths.submissions_dir(root, grid) / 'slurm'}"
        )
        if deferred:
            print(
                f"deferred {sum(len(t.run_ids) for t in deferred)} runs: the controller holds at "
                f"most {limits.max_job_count} jobs (MaxJobCount); submit again when it has room"
            )
        if not wait:
            print(f"follow with 'harness status {grid}'; stop with 'harness cancel {grid}'")
            return LaunchReport(launched=launched, statuses={})
        from harness.launch.waiting import wait_for_runs

        statuses, late = wait_for_runs(self, root, grid, data_root, subs, deferred, show_progress)
        return LaunchReport(launched=launched + late, statuses=statuses)

    def submit_tasks(
        self,
        tasks: Sequence[arrays.TaskPlan],
        root: Path,
        grid: str,
        data_root: Path,
        limits: ClusterLimits,
    ) -> list[Submission]:
        """Submit ``tasks`` in arrays of at most ``MaxArraySize``; records each accepted array."""
        folder = (paths.submissions_dir(root, grid) / "slurm").resolve()
        subs: list[Submission] = []
        for processes in sorted({t.processes for t in tasks}):
            shape = [t for t in tasks if t.processes == processes]
            executor = arrays.make_executor(self.profile, folder, processes, grid)
            start = 0
            for size in array_sizes(len(shape), limits.max_array_size):
                chunk = shape[start : start + size]
                start += size
                try:
                    subs.append(self._submit_chunk(executor, chunk, root, grid, data_root, folder))
                except UserError as e:
                    done = sum(len(t.run_ids) for s in subs for t in s.tasks)
                    raise UserError(
                        f"launcher {self.profile.name!r}: {e}; nothing of this array was queued"
                        + (f" ({done} runs queued before it are recorded)" if subs else "")
                    ) from None
        return subs

    def _submit_chunk(
        self,
        executor: object,
        chunk: Sequence[arrays.TaskPlan],
        root: Path,
        grid: str,
        data_root: Path,
        folder: Path,
    ) -> Submission:
        from harness.launch.task import RunTask  # torch, via the training loop it calls

        callables = [
            RunTask(
                str(root.resolve()), grid, t.run_ids, str(data_root.resolve()),
                self.profile.cpus_per_task, self.keep_checkpoint, self.checkpoint_every_s,
                self.profile.runs_per_device if t.processes == 1 else 1,
            )
            for t in chunk
        ]  # fmt: skip
        job_id, is_array = arrays.submit_array(executor, callables)
        sub = Submission(
            job_id=job_id,
            array=is_array,
            tasks=tuple(t.run_ids for t in chunk),
            submitted_at=now_iso(),
            launcher=self.profile.name,
            log_dir=str(folder / job_id),
        )
        write_submission(root, grid, sub)
        return sub

    def _check_resources(self, tasks: Sequence[arrays.TaskPlan]) -> None:
        nodes = read_nodes()
        for processes in sorted({t.processes for t in tasks}):
            req = arrays.request(self.profile, processes)
            if nodes:
                check_fits(req, nodes, self.profile.name)

    def _room(self, limits: ClusterLimits) -> int:
        """Array tasks the controller can take now under ``MaxJobCount``."""
        try:
            held = jobs_in_controller()
        except SchedulerError as e:
            raise UserError(f"launcher {self.profile.name!r}: {e}") from None
        return max(0, limits.max_job_count - held)
