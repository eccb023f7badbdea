"""Several runs on one device at once: small runs do not leave a big GPU idle.

A task that holds one device and a list of runs (of one grid) trains them ``per_device`` at a time,
each in its own spawned process on the task's device: a crash or an OOM ends one run, not its
neighbours, and each process frees its memory when its run ends. The processes share the grid's
compile cache (:func:`harness.launch.worker.job.share_compile_cache`), so the runs after the first
skip most of the compile. Packing pays where one run cannot fill the device (small models, small
batches): total tokens/s of the device rises while each run's own tokens/s falls
(``benchmarks/packing.py`` measures both). ``per_device=1`` runs them one after another.

Interruption: ``should_stop`` (polled between checks, e.g. a SLURM signal record) is passed on to
every running process, which checkpoints and stops; then :class:`PackInterrupted` is raised so
that the caller can requeue or record the unfinished runs. A requeued task skips the runs whose
newest row it wrote (``job_id``) and resumes the others from their checkpoints.

The runs go through the one run pool (:mod:`harness.launch.worker.pool`), as local runs do. Each
run process is owned by the task (:mod:`harness.launch.worker.process`): it leaves SLURM's
signals (``USR2`` before the time limit, ``SIGTERM`` on scancel or requeue, sent to every process
of the job step) to the task, and stops when the task sets its stop event or is gone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from harness.launch.contract import ExecutionSpec
from harness.launch.worker.job import done_by_job
from harness.launch.worker.pool import Ended, Outcome, RunPool
from harness.store.rows import RowMark
from harness.train.loop import TrainingInterrupted


class PackInterrupted(TrainingInterrupted):
    """``should_stop`` stopped a packed task: what finished, and what has to resume."""

    def __init__(self, grid: str, statuses: dict[str, str], interrupted: Sequence[str]) -> None:
        super().__init__(f"stopped; {len(interrupted)} runs of {grid} checkpointed")
        self.statuses = statuses
        """run_id -> status of the runs that finished (or were skipped as finished)."""
        self.interrupted = tuple(interrupted)
        """Runs stopped while training (each has a checkpoint); runs never started are in
        neither."""


def run_packed(
    spec: ExecutionSpec,
    run_ids: Sequence[str],
    *,
    per_device: int,
    job_id: str | None = None,
    should_stop: Callable[[], bool] | None = None,
    poll_s: float = 0.2,
    seen: Mapping[str, RowMark | None] | None = None,
) -> dict[str, str]:
    """Train ``run_ids`` of ``spec.grid`` on this process's device, ``per_device`` at a time, in a
    :class:`~harness.launch.worker.pool.RunPool`.

    Args:
        spec: how the runs execute (``spec.threads``: torch CPU threads per run process).
        run_ids: planned runs to train, in order.
        per_device: runs training at once (>= 1).
        job_id: recorded in the rows; runs whose newest row has this job id are skipped.
        should_stop: polled every ``poll_s``; True stops every running run (checkpointed).
        poll_s: seconds between polls.
        seen: each run's rows as the launch saw them: a run whose rows changed since is left
            alone (:class:`~harness.launch.worker.pool.RunPool`; default: as it is now).

    Returns:
        run_id -> status of each run (skipped runs included).

    Raises:
        PackInterrupted: ``should_stop`` asked to stop (or a run was interrupted); the
            interrupted runs have checkpoints.
    """
    statuses = done_by_job(spec.results_root, spec.grid, run_ids, job_id)
    pending = [r for r in run_ids if r not in statuses]
    pool = RunPool(spec, pending, parallel=per_device, job_id=job_id, seen=seen)
    interrupted: set[str] = set()
    while not pool.done:
        for end in pool.poll():
            _note(end, statuses, interrupted)
        if should_stop is not None and not pool.stopping and should_stop():
            pool.stop()
        if not pool.done:
            time.sleep(poll_s)
    if pool.stopping or interrupted:
        raise PackInterrupted(spec.grid, statuses, [r for r in run_ids if r in interrupted])
    return statuses


def _note(end: Ended, statuses: dict[str, str], interrupted: set[str]) -> None:
    """Record what became of a packed run (the task's log gets a line for what has no row)."""
    if end.status is not None:
        statuses[end.run_id] = end.status
    if end.outcome is Outcome.CHECKPOINTED:
        interrupted.add(end.run_id)
    elif end.outcome is Outcome.SPILLED:
        print(f"harness: {end.note}", flush=True)
    elif end.outcome in (Outcome.BUSY, Outcome.FINISHED_ELSEWHERE, Outcome.UNRECORDED):
        print(f"harness: run {end.run_id} {end.outcome.value}: left alone", flush=True)
