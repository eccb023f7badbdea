"""``harness cancel GRID``: scancel the grid's queued and running SLURM jobs and record their
unfinished runs as ``cancelled`` (their checkpoints are kept: ``--retry cancelled`` resumes)."""

from __future__ import annotations

import time
from pathlib import Path

from harness.core.errors import UserError
from harness.core.result import Status
from harness.launch.contract import CancelReport
from harness.launch.slurm.reconcile import row_jobs, unfinished
from harness.launch.slurm.records import latest_assignments, read_submissions
from harness.launch.slurm.scheduler import SchedulerError, active_tasks, cancel
from harness.launch.worker.job import write_status
from harness.store.db import newest_values


def cancel_grid(root: Path, grid: str, wait_s: float = 60.0) -> CancelReport | None:
    """scancel every queued or running job of ``grid``'s unfinished runs and record them.

    Waits up to ``wait_s`` for the jobs to leave the queue (running ones write their own
    ``cancelled`` row on SIGTERM), then writes ``cancelled`` rows for the runs that have none.
    The rows are read twice in all, whatever the grid's size.

    Returns:
        What was cancelled; None when the grid has no SLURM submissions.

    Raises:
        UserError: squeue/scancel failed.
    """
    subs = read_submissions(root, grid)
    if not subs:
        return None
    todo = unfinished(latest_assignments(subs), row_jobs(root, grid))
    try:
        active = active_tasks({p.submission.job_id for p in todo.values()})
        targets = {r: p for r, p in todo.items() if p.task in active}
        jobs = tuple(sorted({p.submission.job_id for p in targets.values()}, key=int))
        cancel(jobs)
        deadline = time.monotonic() + wait_s
        while active and time.monotonic() < deadline:
            time.sleep(0.5)
            active = active_tasks(jobs)
    except SchedulerError as e:
        raise UserError(f"cannot cancel {grid!r}: {e}") from None
    cancelled = ending = 0
    rows = newest_values(root, grid, ["job_id", "status"]) if targets else {}
    for run_id, p in sorted(targets.items()):
        row = rows.get(run_id)
        if p.task in active:
            ending += 1
        elif row is None or row[0] != p.task:
            error = f"cancelled by harness cancel (job {p.task})"
            write_status(root, grid, run_id, Status.CANCELLED, error, p.task)
            cancelled += 1
        elif row[1] == Status.CANCELLED:  # the job recorded it itself on SIGTERM
            cancelled += 1
    return CancelReport(grid, jobs, cancelled, ending)
