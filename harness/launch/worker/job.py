"""What one launched task executes: read a run from the manifest, train it, write its row.

A run's failure is recorded, never lost: an exception becomes a row with status ``failed``
(or ``oom``), the traceback's last lines and what the run had done (steps, loss curve). Only an
interruption (preemption, time limit) propagates, so that the launcher can requeue the run,
which then resumes from its checkpoint.

A run is never trained by two processes at once: the process training it holds its run lock
(``<grid>/locks/<run_id>.lock``, a ``flock`` the kernel releases when the process dies, however
it dies); a second process finds it held and raises :class:`RunBusy` without training. A result
the results file system refuses (full, read-only) is kept in a spill file
(:mod:`harness.store.spill`) and written by the next ``submit``.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import torch

from harness.core import env, paths
from harness.core.files import os_error_line, remove_temps, try_locked
from harness.core.provenance import provenance
from harness.core.result import RunResult, Status
from harness.launch import branching
from harness.launch.contract import ExecutionSpec
from harness.launch.inputs import inputs_of
from harness.launch.worker import distributed
from harness.launch.worker.threads import set_run_threads
from harness.store.live import append_point, start_attempt
from harness.store.manifest import load_run
from harness.store.rows import newest_rows
from harness.store.spill import write_or_spill
from harness.train.checkpoint import Checkpointing, read_progress
from harness.train.checkpoint import progress as ckpt_progress
from harness.train.loop import StoppedBeforeFirstStep, TrainingFailed, TrainingInterrupted, train


class RunBusy(Exception):
    """The run is being trained by another process (its lock is held): this process leaves it
    alone."""


class RunFinishedElsewhere(RunBusy):
    """Another process wrote the run's row since the launcher decided to run it: this process
    leaves it alone."""


#: Exception types recorded with a status other than ``failed``.
_STATUS_OF_EXCEPTION: tuple[tuple[type[BaseException], Status], ...] = (
    (torch.OutOfMemoryError, Status.OOM),
    (MemoryError, Status.OOM),
)


def error_tail(exc: BaseException, lines: int = 12) -> str:
    """The last lines of an exception's traceback."""
    text = "".join(traceback.format_exception(exc)).rstrip().splitlines()
    summary = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return "\n".join([summary, *text[-lines:]])


def run_job(
    spec: ExecutionSpec,
    run_id: str,
    *,
    job_id: str | None = None,
    should_stop: Callable[[], bool] | None = None,
    still_needed: Callable[[], bool] | None = None,
) -> Status:
    """Execute planned run ``run_id`` of ``spec.grid`` and write its result row.

    ``should_stop`` is polled once per training step; when it returns True the run writes its
    checkpoint and :class:`TrainingInterrupted` propagates (no row is written).
    ``still_needed`` is asked once the run lock is held (False: another process finished the
    run since it was launched).

    Returns:
        The run's status.

    Raises:
        TrainingInterrupted: the run was asked to stop; its checkpoint is on disk.
        RunBusy: another process trains the run (:class:`RunFinishedElsewhere`: or finished it
            since it was launched).
        ResultSpilled: the result is in a spill file, not in the results folder.
    """
    root, grid = spec.results_root, spec.grid
    lock = paths.run_lock_path(root, grid, run_id)
    with try_locked(lock) if _is_writer() else nullcontext(True) as held:  # rank 0 holds it
        if distributed.any_rank(not held):
            raise RunBusy(f"run {run_id} is being trained by another process ({lock} is held)")
        if still_needed is not None and distributed.any_rank(not still_needed()):
            raise RunFinishedElsewhere(f"run {run_id} has a new row since it was launched")
        return _train_and_record(spec, run_id, job_id, should_stop)


def _train_and_record(
    spec: ExecutionSpec, run_id: str, job_id: str | None, should_stop: Callable[[], bool] | None
) -> Status:
    """:func:`run_job` once the run lock is held."""
    root, grid = spec.results_root, spec.grid
    run = load_run(root, grid, run_id)
    share_compile_cache(root, grid)
    threads = set_run_threads(spec.threads)  # recorded in its row
    ckpt = paths.checkpoint_path(root, grid, run_id)
    reached = paths.progress_path(root, grid, run_id)
    live = paths.live_path(root, grid, run_id)
    if _is_writer():
        remove_temps(ckpt)  # left by a process killed while checkpointing (up to GBs each)
        remove_temps(reached)
    start = time.time()
    inputs: dict[str, str | None] = {}
    keep = bool(run.execution.keep_weights)
    try:  # a branch waits for its parent's state
        first = branching.start_from(root, grid, run_id, should_stop, _to_log)
    except branching.WaitStopped as e:
        raise StoppedBeforeFirstStep(str(e)) from None
    try:
        inputs = inputs_of(run, spec.data_root)  # the code and data this attempt trains with
        result = train(
            run,
            data_root=spec.data_root,
            checkpoint=Checkpointing(
                ckpt,
                spec.checkpoint_every_s,
                progress=reached,
                weights=paths.weights_path(root, grid, run_id) if keep else None,
                start_from=first,
                branch_points=branching.branch_points(root, grid, run_id),
            ),
            should_stop=should_stop,
            on_point=_LiveWriter(live) if _is_writer() else None,
        )
    except TrainingInterrupted:
        raise
    except Exception as exc:  # recorded in the row, not lost
        partial = exc.partial if isinstance(exc, TrainingFailed) else None
        exc = exc.error if isinstance(exc, TrainingFailed) else exc
        print(f"harness: run {run_id} failed:", file=sys.stderr)  # the run's log: its traceback
        traceback.print_exception(exc, file=sys.stderr)
        status = next((s for t, s in _STATUS_OF_EXCEPTION if isinstance(exc, t)), Status.FAILED)
        result = partial or RunResult(status=status)
        result.status, result.error = status, error_tail(exc)
        result.metrics.setdefault("wall_s", time.time() - start)
    if _is_writer():
        where = provenance(job_id or env.SLURM_JOB_ID.get())
        write_or_spill(root, run, result, where | inputs | threads)
        reached.unlink(missing_ok=True)
        live.unlink(missing_ok=True)  # its row is written: no longer a live run
        if not spec.keep_checkpoints:
            ckpt.unlink(missing_ok=True)
        branching.finished(root, grid, run_id, result.status)
    return result.status


def write_status(
    root: Path, grid: str, run_id: str, status: Status, error: str, job_id: str | None
) -> None:
    """Write a row with only an outcome (``cancelled``, ``timeout``, ...) for a run that stopped
    without a result, with what it had done (steps, loss curve): what its checkpoint or its
    progress file (:func:`harness.core.paths.progress_path`, newer when the run was killed
    between checkpoints) says, whichever reached further; the checkpoint is kept, so a retry
    resumes it.

    Raises:
        ResultSpilled: the row is in a spill file, not in the results folder.
    """
    run = load_run(root, grid, run_id)
    result = RunResult(status=status, error=error)
    reached = [
        ckpt_progress(paths.checkpoint_path(root, grid, run_id)),
        read_progress(paths.progress_path(root, grid, run_id)),
    ]
    done = max(
        (d for d in reached if d is not None), key=lambda d: int(d.get("step", 0)), default=None
    )
    if done is not None:
        result.steps_done = int(done.get("step", 0))
        result.tokens_seen = result.steps_done * run.data.tokens_per_step
        result.curve = list(done.get("curve", []))
    write_or_spill(root, run, result, provenance(job_id))
    paths.live_path(root, grid, run_id).unlink(missing_ok=True)


class _LiveWriter:
    """Appends each logged point to a run's live file (:mod:`harness.store.live`); a file
    system that refuses costs a warning once, not the run."""

    def __init__(self, path: Path) -> None:
        self.path, self.warned, self.started = path, False, False

    def __call__(self, point: dict[str, Any]) -> None:
        try:
            if not self.started:
                start_attempt(self.path)  # after a process killed mid-line
                self.started = True
            append_point(self.path, point)
        except OSError as e:
            if not self.warned:
                print(
                    f"harness: warning: live curve not written: {os_error_line(e)}", file=sys.stderr
                )
            self.warned = True


def done_by_job(
    root: Path, grid: str, run_ids: Sequence[str], job_id: str | None
) -> dict[str, str]:
    """Statuses of the runs among ``run_ids`` whose newest row job ``job_id`` wrote in an earlier
    attempt (a requeued task skips them). A ``cancelled`` row does not count: a requeue that
    looked like a cancellation resumes the run rather than leaving it cancelled."""
    rows = written_by_job(root, grid, run_ids, job_id)
    return {r: status for r, status in rows.items() if status != Status.CANCELLED}


def written_by_job(
    root: Path, grid: str, run_ids: Sequence[str], job_id: str | None
) -> dict[str, str]:
    """run_id -> status of the runs among ``run_ids`` whose newest row job ``job_id`` wrote.
    Reads only these runs' rows (:func:`~harness.store.rows.newest_rows`), never the grid's."""
    if job_id is None:
        return {}
    rows = newest_rows(root, grid, run_ids, ["job_id", "status"])
    return {r: str(row["status"]) for r, row in rows.items() if row["job_id"] == job_id}


def share_compile_cache(root: Path, grid: str) -> None:
    """Point torch.compile's kernel caches (Inductor's, Triton's) at ``<root>/<grid>/compile_cache``
    unless the environment names them already: every run of a grid after the first reuses the
    kernels the first one compiled (same shapes, same code) instead of compiling them again."""
    folder = paths.compile_cache_dir(root, grid).resolve()
    os.environ.setdefault(env.TORCHINDUCTOR_CACHE_DIR.name, str(folder))
    os.environ.setdefault(env.TRITON_CACHE_DIR.name, str(folder / "triton"))


def _to_log(line: str) -> None:
    """A line in the run's log (its stderr)."""
    print(f"harness: {line}", file=sys.stderr)


def _is_writer() -> bool:
    """Only rank 0 of a multi-process run writes results."""
    import torch.distributed as dist

    return not (dist.is_available() and dist.is_initialized()) or dist.get_rank() == 0
