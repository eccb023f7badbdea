"""Several runs on one device at once: small runs do not leave a big GPU idle.

A task that holds one device and a list of runs (of one grid) trains them ``per_device`` at a time,
each in its own spawned process on the task's device: a crash or an OOM ends one run, not its
neighbours, and each process frees its memory when its run ends. The processes share the grid's
compile cache (:func:`harness.launch.job.share_compile_cache`), so the runs after the first skip
most of the compile. Packing pays where one run cannot fill the device (small models, small
batches): total tokens/s of the device rises while each run's own tokens/s falls
(``benchmarks/packing.py`` measures both). ``per_device=1`` runs them one after another.

Interruption: ``should_stop`` (polled between checks, e.g. a SLURM signal record) is passed on to
every running process, which checkpoints and stops; then :class:`TrainingInterrupted` is raised
so that the caller can requeue. A requeued task skips the runs whose newest row it wrote
(``job_id``) and resumes the others from their checkpoints.
"""

from __future__ import annotations

import multiprocessing as mp
import sys
import time
from collections.abc import Callable, Sequence
from multiprocessing.synchronize import Event
from pathlib import Path

from harness.db import newest_values
from harness.launch.job import run_job, write_status
from harness.train import TrainingInterrupted

INTERRUPTED_EXIT = 75
"""Exit code of a run process stopped by ``should_stop`` (its checkpoint is on disk)."""


def run_packed(
    results_root: str,
    grid: str,
    run_ids: Sequence[str],
    data_root: str,
    *,
    per_device: int,
    threads: int | None = None,
    job_id: str | None = None,
    should_stop: Callable[[], bool] | None = None,
    poll_s: float = 0.2,
) -> dict[str, str]:
    """Train ``run_ids`` of ``grid`` on this process's device, ``per_device`` at a time.

    Args:
        results_root: the results root (the manifest and rows live there).
        grid: the grid's name.
        run_ids: planned runs to train, in order.
        data_root: where registered datasets are prepared.
        per_device: runs training at once (>= 1).
        threads: torch CPU threads per run process (None: torch's default).
        job_id: recorded in the rows; runs whose newest row has this job id are skipped.
        should_stop: polled every ``poll_s``; True stops every running run (checkpointed).
        poll_s: seconds between polls.

    Returns:
        run_id -> status of each run (skipped runs included).

    Raises:
        TrainingInterrupted: ``should_stop`` asked to stop; unfinished runs have checkpoints.
    """
    assert per_device >= 1, per_device
    statuses = _done_by(Path(results_root), grid, run_ids, job_id)
    pending = [r for r in run_ids if r not in statuses]
    ctx = mp.get_context("spawn")  # CUDA cannot be forked; each run gets a fresh interpreter
    stop, results = ctx.Event(), ctx.SimpleQueue()
    active: dict[str, mp.process.BaseProcess] = {}
    exits: list[int] = []
    while pending or active:
        while pending and len(active) < per_device and not stop.is_set():
            run_id = pending.pop(0)
            args = (results_root, grid, run_id, data_root, threads, job_id, stop, results)
            active[run_id] = ctx.Process(target=_child, args=args, name=f"run-{run_id}")
            active[run_id].start()
        time.sleep(poll_s)
        if should_stop is not None and not stop.is_set() and should_stop():
            stop.set()
            pending.clear()
        _drain(results, statuses)
        for run_id, proc in list(active.items()):
            if proc.exitcode is not None:
                del active[run_id]
                exits.append(proc.exitcode)
                if proc.exitcode not in (0, INTERRUPTED_EXIT) and run_id not in statuses:
                    statuses[run_id] = _died(results_root, grid, run_id, proc.exitcode, job_id)
    _drain(results, statuses)
    if stop.is_set() or INTERRUPTED_EXIT in exits:
        raise TrainingInterrupted(f"stopped; unfinished runs of {grid} have checkpoints")
    return statuses


def _drain(results: mp.SimpleQueue, statuses: dict[str, str]) -> None:
    """Move the (run_id, status) pairs the run processes reported into ``statuses``."""
    while not results.empty():
        run_id, status = results.get()
        statuses[run_id] = status


def _done_by(root: Path, grid: str, run_ids: Sequence[str], job_id: str | None) -> dict[str, str]:
    """Statuses of the runs whose newest row this job wrote (an earlier attempt of the task)."""
    if job_id is None:
        return {}
    rows = newest_values(root, grid, ["job_id", "status"])
    return {r: rows[r][1] for r in run_ids if r in rows and rows[r][0] == job_id}


def _child(
    results_root: str,
    grid: str,
    run_id: str,
    data_root: str,
    threads: int | None,
    job_id: str | None,
    stop: Event,
    results: mp.SimpleQueue,
) -> None:
    """One run in its own process; reports its status, or exits INTERRUPTED_EXIT."""
    try:
        status = run_job(
            results_root, grid, run_id, data_root, threads, job_id, should_stop=stop.is_set
        )
    except TrainingInterrupted:
        sys.exit(INTERRUPTED_EXIT)
    results.put((run_id, status))


def _died(results_root: str, grid: str, run_id: str, exitcode: int, job_id: str | None) -> str:
    """Record a run whose process died before reporting (killed, segfault) as ``failed``."""
    error = f"run process died with exit code {exitcode} (killed or crashed) while packed"
    write_status(results_root, grid, run_id, "failed", error, job_id)
    return "failed"
