"""Rows for runs whose SLURM job ended without writing one (killed for memory, at the time
limit, cancelled while pending, node failure), classified from the job's sacct state.

A run is reconciled only when its latest job task has left the queue (squeue) and sacct reports a
final state for it; its row then says how the job ended and where its log is. Runs of tasks that
ended ``COMPLETED`` without a row (not started because an earlier packed run timed out) stay
missing, so the next ``submit`` runs them.

A row is never written over a result: a run that has (or had) a ``completed`` or ``diverged`` row,
from any job, is left alone, and so is a run the task never started: of a dead task's runs
without a row, only those it was training get one (the first in the task's order, and any whose
live curve, progress file or checkpoint was written after the job was submitted); the others
stay missing, so the next ``submit`` runs them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path

from harness.core import paths
from harness.core.result import Status
from harness.launch.slurm.records import Assignment, latest_assignments, read_submissions
from harness.launch.slurm.scheduler import active_tasks, final_states
from harness.launch.worker.job import write_status
from harness.store.db import newest_values, runs_with_result

#: sacct state of an ended task -> status of its runs that have no row.
SACCT_STATUS: dict[str, Status] = {
    "OUT_OF_MEMORY": Status.OOM,
    "TIMEOUT": Status.TIMEOUT,
    "DEADLINE": Status.TIMEOUT,
    "CANCELLED": Status.CANCELLED,
    "FAILED": Status.FAILED,
    "NODE_FAIL": Status.FAILED,
    "BOOT_FAIL": Status.FAILED,
    "PREEMPTED": Status.FAILED,
}

MEMORY_KILL_MARKERS = ("exceeded memory limit", "oom-kill", "oom_kill", "out of memory")
"""Lines SLURM writes to a task's log when it kills the task for memory (slurmstepd without
cgroups ends such a job ``FAILED``, with cgroups ``OUT_OF_MEMORY``)."""


def killed_for_memory(log: Path, tail_bytes: int = 8192) -> bool:
    """Whether the end of a task's log says SLURM killed it for memory."""
    try:
        with open(log, "rb") as fh:
            fh.seek(max(0, log.stat().st_size - tail_bytes))
            text = fh.read().decode(errors="replace").lower()
    except OSError:
        return False
    return any(m in text for m in MEMORY_KILL_MARKERS)


def row_jobs(root: Path, grid: str) -> dict[str, str | None]:
    """run_id -> job id recorded in its newest row (None for rows made outside SLURM), from
    per-run and compacted files alike."""
    return {r: v[0] for r, v in newest_values(root, grid, ["job_id"]).items()}


def row_of(root: Path, grid: str, run_id: str) -> tuple[str | None, str] | None:
    """(job id, status) of a run's newest row (per-run or compacted), or None when it has none."""
    found = newest_values(root, grid, ["job_id", "status"], run_id=run_id)
    return found.get(run_id)


def unfinished(
    assignments: Mapping[str, Assignment], rows: Mapping[str, str | None]
) -> dict[str, Assignment]:
    """Runs whose latest job task has not written their row."""
    return {r: p for r, p in assignments.items() if rows.get(r, "") != p.task}


def in_training(root: Path, grid: str, todo: Mapping[str, Assignment]) -> set[str]:
    """The runs of ``todo`` (runs without a row from their latest task) that task was training
    when it ended: per task, the first of its runs in ``todo`` (a packed task trains its runs in
    order and skips those with a result), and every run with a live curve, progress file or
    checkpoint written since the job was submitted."""
    out: set[str] = set()
    tasks: dict[str, Assignment] = {}
    for p in todo.values():
        tasks.setdefault(p.task, p)
    for p in tasks.values():
        first = next((r for r in p.submission.tasks[p.index] if r in todo), None)
        if first is not None:
            out.add(first)
    for run_id, p in todo.items():
        since = _timestamp(p.submission.submitted_at)
        traces = (
            paths.live_path(root, grid, run_id),
            paths.progress_path(root, grid, run_id),
            paths.checkpoint_path(root, grid, run_id),
        )
        if any(_mtime(f) >= since for f in traces):
            out.add(run_id)
    return out


def _timestamp(iso: str) -> float:
    try:
        when = dt.datetime.fromisoformat(iso)
    except ValueError:
        return 0.0
    return (when if when.tzinfo else when.replace(tzinfo=dt.UTC)).timestamp()


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return float("-inf")


def reconcile(root: Path, grid: str) -> dict[str, str]:
    """Write rows for runs whose job ended without one; returns run_id -> status written.

    Raises:
        SchedulerError: squeue or sacct cannot answer.
    """
    subs = read_submissions(root, grid)
    if not subs:
        return {}
    todo = unfinished(latest_assignments(subs), row_jobs(root, grid))
    if not todo:
        return {}
    had_result = runs_with_result(root, grid)
    todo = {r: p for r, p in todo.items() if r not in had_result}
    if not todo:
        return {}
    job_ids = {p.submission.job_id for p in todo.values()}
    active = active_tasks(job_ids)
    ended = final_states(job_ids)
    training = in_training(root, grid, todo)
    written: dict[str, str] = {}
    for run_id, p in sorted(todo.items()):
        if p.task in active or p.task not in ended or run_id not in training:
            continue
        state, code = ended[p.task]
        status = SACCT_STATUS.get(state)
        if status is None:
            continue
        log = Path(p.submission.log_dir) / f"{p.task}_0_log.err"
        if status in (Status.FAILED, Status.CANCELLED) and killed_for_memory(log):
            status = Status.OOM
        error = f"job {p.task} ended {state} (exit {code}) without a result row; log: {log}"
        write_status(root, grid, run_id, status, error, p.task)
        written[run_id] = status
    return written
