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

Signals are the parent's business: SLURM signals every process of a job step (``USR2`` before
the time limit, ``SIGTERM`` on scancel or requeue), so the run processes ignore ``SIGTERM``,
``SIGUSR2`` and ``SIGINT`` (which would kill them before they checkpoint) and stop when the
parent sets the shared stop event, or when the parent is gone.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from multiprocessing.synchronize import Event

from harness.core.result import Status
from harness.launch.contract import ExecutionSpec
from harness.launch.worker.job import done_by_job, run_job, write_status
from harness.train.loop import TrainingInterrupted

INTERRUPTED_EXIT = 75
"""Exit code of a run process stopped by ``should_stop`` (its checkpoint is on disk)."""
_PARENT_SIGNALS = (signal.SIGTERM, signal.SIGUSR2, signal.SIGINT)
"""Signals a run process leaves to its parent (see the module docstring)."""


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
    ctx = mp.get_context("spawn")  # CUDA cannot be forked; each run gets a fresh interpreter
    stop, results = ctx.Event(), ctx.SimpleQueue()
    active: dict[str, mp.process.BaseProcess] = {}
    interrupted: list[str] = []
    while pending or active:
        while pending and len(active) < per_device and not stop.is_set():
            run_id = pending.pop(0)
            args = (spec, run_id, job_id, os.getpid(), stop, results)
            active[run_id] = ctx.Process(target=_child, args=args, name=f"run-{run_id}")
            _start_shielded(active[run_id])
        time.sleep(poll_s)
        if should_stop is not None and not stop.is_set() and should_stop():
            stop.set()
            pending.clear()
        _drain(results, statuses)
        for run_id, proc in list(active.items()):
            if proc.exitcode is not None:
                del active[run_id]
                if proc.exitcode == INTERRUPTED_EXIT:
                    interrupted.append(run_id)
                if proc.exitcode not in (0, INTERRUPTED_EXIT) and run_id not in statuses:
                    statuses[run_id] = _died(spec, run_id, proc.exitcode, job_id)
    _drain(results, statuses)
    if stop.is_set() or interrupted:
        raise PackInterrupted(spec.grid, statuses, [r for r in run_ids if r in interrupted])
    return statuses


def _start_shielded(proc: mp.process.BaseProcess) -> None:
    """Start ``proc`` with the parent's signals blocked: the child inherits the mask through
    exec and unblocks them only once it ignores them, so a signal during its start-up (torch's
    import takes seconds) cannot kill it. Signals reaching the parent meanwhile stay pending."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, _PARENT_SIGNALS)
    try:
        proc.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _drain(results: mp.SimpleQueue, statuses: dict[str, str]) -> None:
    """Move the (run_id, status) pairs the run processes reported into ``statuses``."""
    while not results.empty():
        run_id, status = results.get()
        statuses[run_id] = status


def _child(
    spec: ExecutionSpec,
    run_id: str,
    job_id: str | None,
    parent: int,
    stop: Event,
    results: mp.SimpleQueue,
) -> None:
    """One run in its own process; reports its status, or exits INTERRUPTED_EXIT."""
    for signum in _PARENT_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _PARENT_SIGNALS)  # blocked by _start_shielded
    for stream in (sys.stdout, sys.stderr):  # progress lines reach the task's log as they come
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(line_buffering=True)

    def should_stop() -> bool:
        return stop.is_set() or os.getppid() != parent  # a dead parent re-parents us

    try:
        status = run_job(spec, run_id, job_id=job_id, should_stop=should_stop)
    except TrainingInterrupted:
        sys.exit(INTERRUPTED_EXIT)
    results.put((run_id, status))


def _died(spec: ExecutionSpec, run_id: str, exitcode: int, job_id: str | None) -> str:
    """Record a run whose process died before reporting (killed, segfault) as ``failed``."""
    how = f"by {signal.Signals(-exitcode).name}" if exitcode < 0 else f"with exit code {exitcode}"
    error = f"run process died {how} while packed (killed, out of memory, or crashed)"
    write_status(spec.results_root, spec.grid, run_id, Status.FAILED, error, job_id)
    return Status.FAILED.value
