"""What one launched task executes: read a run from the manifest, train it, write its row.

A run's failure is recorded, never lost: an exception becomes a row with status ``failed``
(or ``oom``) and the traceback's last lines. Only an interruption (preemption, time limit)
propagates, so that the launcher can requeue the run, which then resumes from its checkpoint.
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from harness.core import paths
from harness.core.provenance import provenance
from harness.core.result import RunResult, Status
from harness.launch.contract import ExecutionSpec
from harness.launch.inputs import inputs_of
from harness.store.manifest import load_run
from harness.store.rows import write_result
from harness.train.checkpoint import Checkpointing
from harness.train.loop import TrainingInterrupted, train

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
) -> str:
    """Execute planned run ``run_id`` of ``spec.grid`` and write its result row.

    ``should_stop`` is polled once per training step; when it returns True the run writes its
    checkpoint and :class:`TrainingInterrupted` propagates (no row is written).

    Returns:
        The run's status.

    Raises:
        TrainingInterrupted: the run was asked to stop; its checkpoint is on disk.
    """
    root, grid = spec.results_root, spec.grid
    run = load_run(root, grid, run_id)
    share_compile_cache(root, grid)
    if spec.threads:
        torch.set_num_threads(spec.threads)
    ckpt = paths.checkpoint_path(root, grid, run_id)
    start = time.time()
    inputs: dict[str, str | None] = {}
    try:
        inputs = inputs_of(run, spec.data_root)  # the code and data this attempt trains with
        result = train(
            run,
            data_root=spec.data_root,
            checkpoint=Checkpointing(ckpt, spec.checkpoint_every_s),
            should_stop=should_stop,
        )
    except TrainingInterrupted:
        raise
    except Exception as exc:  # recorded in the row, not lost
        status = next((s for t, s in _STATUS_OF_EXCEPTION if isinstance(exc, t)), Status.FAILED)
        result = RunResult(
            status=status, error=error_tail(exc), metrics={"wall_s": time.time() - start}
        )
    if _is_writer():
        where = provenance(job_id or os.environ.get("SLURM_JOB_ID"))
        write_result(root, run, result, where | inputs)
        if not spec.keep_checkpoints:
            ckpt.unlink(missing_ok=True)
    return str(result.status)


def write_status(
    root: Path, grid: str, run_id: str, status: str, error: str, job_id: str | None
) -> None:
    """Write a row with only an outcome (``cancelled``, ``timeout``, ...) for a run that stopped
    without a result; its checkpoint is kept, so a retry resumes it."""
    run = load_run(root, grid, run_id)
    write_result(root, run, RunResult(status=status, error=error), provenance(job_id))


def done_by_job(
    root: Path, grid: str, run_ids: Sequence[str], job_id: str | None
) -> dict[str, str]:
    """Statuses of the runs among ``run_ids`` whose newest row job ``job_id`` wrote in an earlier
    attempt (a requeued task skips them). A ``cancelled`` row does not count: a requeue that
    looked like a cancellation resumes the run rather than leaving it cancelled."""
    if job_id is None:
        return {}
    from harness.store.db import newest_values  # DuckDB: only where a task restarts

    rows = newest_values(root, grid, ["job_id", "status"])
    return {
        r: rows[r][1]
        for r in run_ids
        if r in rows and rows[r][0] == job_id and rows[r][1] != Status.CANCELLED
    }


def share_compile_cache(root: Path, grid: str) -> None:
    """Point torch.compile's kernel caches (Inductor's, Triton's) at ``<root>/<grid>/compile_cache``
    unless the environment names them already: every run of a grid after the first reuses the
    kernels the first one compiled (same shapes, same code) instead of compiling them again."""
    folder = paths.compile_cache_dir(root, grid).resolve()
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(folder))
    os.environ.setdefault("TRITON_CACHE_DIR", str(folder / "triton"))


def _is_writer() -> bool:
    """Only rank 0 of a multi-process run writes results."""
    import torch.distributed as dist

    return not (dist.is_available() and dist.is_initialized()) or dist.get_rank() == 0
