"""``harness submit --wait`` on SLURM: follow submitted runs until each has its row, with a
progress line; submit deferred tasks as the controller gets room."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import duckdb

from harness.core.env import wait_poll_s
from harness.core.result import Status
from harness.launch.progress import Progress, val_loss_of
from harness.launch.slurm.arrays import TaskPlan
from harness.launch.slurm.reconcile import reconcile
from harness.launch.slurm.records import Assignment, Submission, latest_assignments
from harness.launch.slurm.scheduler import SchedulerError, active_tasks
from harness.store.db import error_text, newest_values

POLL_S = 5.0
"""Seconds between looks at the rows and the queue, unless ``HARNESS_WAIT_POLL_S`` says otherwise
(:func:`harness.core.env.wait_poll_s`)."""
GONE_GRACE_S = 30.0
"""Seconds a task may be out of the queue without its rows (sacct lags) before waiting stops."""


def _collect(
    root: Path, grid: str, pending: dict[str, Assignment], progress: Progress | None
) -> dict[str, str]:
    """Statuses of pending runs whose row from their task has arrived (removed from pending).
    The rows are read once per call, whatever the number of runs."""
    out: dict[str, str] = {}
    if not pending:
        return out
    try:
        rows = newest_values(root, grid, ["job_id", "status"])
    except duckdb.Error as e:  # a row file replaced while it was read: the next poll reads it
        print(f"reading the rows of {grid!r}: {error_text(e)}; still waiting")
        return out
    for run_id, p in list(pending.items()):
        row = rows.get(run_id)
        if row is not None and row[0] == p.task:
            out[run_id] = row[1]
            del pending[run_id]
            if progress:
                progress.finished(Status(row[1]), val_loss_of(root, grid, run_id))
    return out


TopUp = Callable[[Sequence[TaskPlan]], tuple[list[Submission], int]]
"""Submit what fits of some deferred tasks: returns the accepted arrays and how many tasks the
controller had room for (the first that many tasks were submitted)."""


def wait_for_runs(
    root: Path,
    grid: str,
    subs: Sequence[Submission],
    deferred: Sequence[TaskPlan],
    top_up: TopUp,
    show_progress: bool = True,
    poll_s: float | None = None,
) -> tuple[dict[str, str], int]:
    """Block until every run of ``subs`` (and of ``deferred``, submitted on the way through
    ``top_up``) has a row.

    Returns:
        run_id -> status of the runs that finished, and how many deferred runs were submitted
        while waiting. Ctrl-C stops waiting, not the jobs.
    """
    poll = wait_poll_s(POLL_S) if poll_s is None else poll_s
    pending = dict(latest_assignments(subs))
    deferred = list(deferred)
    held_back = sum(len(t.run_ids) for t in deferred)
    total = len(pending) + held_back
    progress = Progress(total) if show_progress else None
    statuses: dict[str, str] = {}
    gone: dict[str, float] = {}
    try:
        while pending or deferred:
            time.sleep(poll)
            statuses.update(_collect(root, grid, pending, progress))
            if deferred:
                submitted, room = top_up(deferred)
                pending.update(latest_assignments(submitted))
                deferred = deferred[max(0, room) :]
            try:
                active = active_tasks({p.submission.job_id for p in pending.values()})
            except SchedulerError as e:
                print(f"squeue: {e}; still waiting")
                continue
            _drop_vanished(root, grid, pending, active, gone, statuses, progress)
            if progress:
                progress.running = sum(1 for s in active.values() if s == "RUNNING")
                progress.draw()
    except KeyboardInterrupt:
        print(f"\nstopped waiting; the jobs keep running ('harness cancel {grid}' stops them)")
    finally:
        if progress:
            progress.close()
    return statuses, held_back - sum(len(t.run_ids) for t in deferred)


def _drop_vanished(
    root: Path,
    grid: str,
    pending: dict[str, Assignment],
    active: dict[str, str],
    gone: dict[str, float],
    statuses: dict[str, str],
    progress: Progress | None,
) -> None:
    """Runs whose task left the queue without a row: classify from sacct, or give up after a
    grace period (the run stays missing; the next submit runs it)."""
    vanished = {r for r, p in pending.items() if p.task not in active}
    if not vanished:
        return
    now = time.monotonic()
    for r in vanished:
        gone.setdefault(r, now)
    with contextlib.suppress(SchedulerError):
        reconcile(root, grid)
    statuses.update(_collect(root, grid, pending, progress))
    for r in [r for r in vanished if r in pending and now - gone[r] > GONE_GRACE_S]:
        print(f"run {r}: job {pending[r].task} ended without a row (see its log)")
        del pending[r]
