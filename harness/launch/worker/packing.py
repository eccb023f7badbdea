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

Each run process is owned by the task (:mod:`harness.launch.worker.process`): it leaves SLURM's
signals (``USR2`` before the time limit, ``SIGTERM`` on scancel or requeue, sent to every process
of the job step) to the task, and stops when the task sets its stop event or is gone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from harness.core.result import Status
from harness.launch.contract import ExecutionSpec
from harness.launch.worker import process
from harness.launch.worker.job import done_by_job, write_status
from harness.launch.worker.process import BUSY_EXIT, INTERRUPTED_EXIT, RunProcess
from harness.store.spill import ResultSpilled
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
) -> dict[str, str]:
    """Train ``run_ids`` of ``spec.grid`` on this process's device, ``per_device`` at a time.

    Args:
        spec: how the runs execute (``spec.threads``: torch CPU threads per run process).
        run_ids: planned runs to train, in order.
        per_device: runs training at once (>= 1).
        job_id: recorded in the rows; runs whose newest row has this job id are skipped.
        should_stop: polled every ``poll_s``; True stops every running run (checkpointed).
        poll_s: seconds between polls.

    Returns:
        run_id -> status of each run (skipped runs included).

    Raises:
        PackInterrupted: ``should_stop`` asked to stop (or a run was interrupted); the
            interrupted runs have checkpoints.
    """
    assert per_device >= 1, per_device
    statuses = done_by_job(spec.results_root, spec.grid, run_ids, job_id)
    pending = [r for r in run_ids if r not in statuses]
    ctx = process.spawn_context()
    reports = ctx.SimpleQueue()
    active: dict[str, RunProcess] = {}
    interrupted: list[str] = []
    stopping = False
    while pending or active:
        while pending and len(active) < per_device and not stopping:
            run_id = pending.pop(0)
            active[run_id] = process.start(ctx, spec, run_id, reports, job_id=job_id)
        time.sleep(poll_s)
        if should_stop is not None and not stopping and should_stop():
            stopping = True
            pending.clear()
            for p in active.values():
                p.stop.set()
        _drain(reports, statuses)
        for run_id, p in list(active.items()):
            code = p.process.exitcode
            if code is not None:
                del active[run_id]
                if code == INTERRUPTED_EXIT:
                    interrupted.append(run_id)
                elif code not in (0, BUSY_EXIT) and run_id not in statuses:
                    statuses[run_id] = _died(spec, run_id, code, job_id)
    _drain(reports, statuses)
    if stopping or interrupted:
        raise PackInterrupted(spec.grid, statuses, [r for r in run_ids if r in interrupted])
    return statuses


def _drain(reports: object, statuses: dict[str, str]) -> None:
    """Move the statuses the run processes reported into ``statuses`` (a busy run has none)."""
    for run_id, status, _ in process.drain(reports):
        if status != "busy":
            statuses[run_id] = status


def _died(spec: ExecutionSpec, run_id: str, exitcode: int, job_id: str | None) -> str:
    """Record a run whose process died before reporting (killed, segfault) as ``failed``."""
    how = process.died_how(exitcode)
    error = f"run process died {how} while packed (killed, out of memory, or crashed)"
    try:
        write_status(spec.results_root, spec.grid, run_id, Status.FAILED, error, job_id)
    except ResultSpilled as e:
        print(f"harness: {e.line}", flush=True)
    return Status.FAILED.value
