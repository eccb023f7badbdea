"""What one launched task executes: read a run from the manifest, train it, write its row.

A run's failure is recorded, never lost: an exception becomes a row with status ``failed``
(or ``oom``) and the traceback's last lines. Only an interruption (preemption, time limit)
propagates, so that the launcher can requeue the run, which then resumes from its checkpoint.
"""

from __future__ import annotations

import os
import time
import traceback
from pathlib import Path

import torch

from harness import paths
from harness.manifest import load_run
from harness.outcome import RunResult
from harness.provenance import provenance
from harness.results import write_result
from harness.train import TrainingInterrupted, train

#: Exception types recorded with a status other than ``failed``.
_STATUS_OF_EXCEPTION: tuple[tuple[type[BaseException], str], ...] = (
    (torch.OutOfMemoryError, "oom"),
    (MemoryError, "oom"),
)


def error_tail(exc: BaseException, lines: int = 12) -> str:
    """The last lines of an exception's traceback."""
    text = "".join(traceback.format_exception(exc)).rstrip().splitlines()
    summary = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return "\n".join([summary, *text[-lines:]])


def run_job(
    results_root: str,
    grid: str,
    run_id: str,
    data_root: str,
    threads: int | None = None,
    job_id: str | None = None,
    keep_checkpoint: bool = False,
    checkpoint_every_s: float = 120.0,
) -> str:
    """Execute planned run ``run_id`` of ``grid`` and write its result row.

    Returns:
        The run's status.

    Raises:
        TrainingInterrupted: the run was asked to stop; its checkpoint is on disk.
    """
    root = Path(results_root)
    run = load_run(root, grid, run_id)
    if threads:
        torch.set_num_threads(threads)
    ckpt = paths.checkpoint_path(root, grid, run_id)
    start = time.time()
    try:
        result = train(
            run, data_root=Path(data_root), checkpoint=ckpt, checkpoint_every_s=checkpoint_every_s
        )
    except TrainingInterrupted:
        raise
    except Exception as exc:  # recorded in the row, not lost
        status = next((s for t, s in _STATUS_OF_EXCEPTION if isinstance(exc, t)), "failed")
        result = RunResult(status=status, error=error_tail(exc), wall_s=time.time() - start)
    if _is_writer():
        write_result(root, run, result, provenance(job_id or os.environ.get("SLURM_JOB_ID")))
        if not keep_checkpoint:
            ckpt.unlink(missing_ok=True)
    return result.status


def _is_writer() -> bool:
    """Only rank 0 of a multi-process run writes results."""
    import torch.distributed as dist

    return not (dist.is_available() and dist.is_initialized()) or dist.get_rank() == 0
