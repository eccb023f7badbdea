"""Rows for runs whose SLURM job ended without writing one (killed for memory, at the time
limit, cancelled while pending, node failure), classified from the job's sacct state.

A run is reconciled only when its latest job task has left the queue (squeue) and sacct reports a
final state for it; its row then says how the job ended and where its log is. Runs of tasks that
ended ``COMPLETED`` without a row (not started because an earlier packed run timed out) stay
missing, so the next ``submit`` runs them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from harness.core.result import Status
from harness.launch.slurm.records import Assignment, latest_assignments, read_submissions
from harness.launch.slurm.scheduler import active_tasks, final_states
from harness.launch.worker.job import write_status
from harness.store.db import newest_values

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
    job_ids = {p.submission.job_id for p in todo.values()}
    active = active_tasks(job_ids)
    ended = final_states(job_ids)
    written: dict[str, str] = {}
    for run_id, p in sorted(todo.items()):
        if p.task in active or p.task not in ended:
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
