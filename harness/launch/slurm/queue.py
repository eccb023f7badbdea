"""The SLURM backend's :class:`~harness.launch.contract.Queue`: which runs of a grid its array
tasks have queued or are running (submission records + squeue), the grid's runs by task state
(squeue, sacct) and ``scancel``. Every ``submit``, ``status`` and ``cancel`` asks it, whatever
the launcher (a ``--local`` submit on a machine that sees the cluster leaves those runs out)."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from harness.core.errors import UserError
from harness.launch.contract import CancelReport, QueueView
from harness.launch.slurm.scheduler import SchedulerError


class SlurmQueue:
    """See the module docstring."""

    def queued(self, root: Path, grid: str, run_ids: Collection[str]) -> set[str]:
        """Runs whose latest submitted task is queued or running. On a machine without
        ``squeue`` (results copied from a cluster) none: no task of this machine's can be
        queued, and a SLURM launch there fails before it queues anything.

        Raises:
            UserError: squeue is there but cannot answer.
        """
        from harness.launch.slurm.queued import queued_on_slurm

        try:
            return queued_on_slurm(root, grid, run_ids, need_squeue=False)
        except SchedulerError as e:
            raise UserError(f"cannot tell which runs of {grid!r} SLURM has queued: {e}") from None

    def view(self, root: Path, grid: str) -> QueueView | None:
        """The grid's runs by the state of their latest task (None: never submitted here)."""
        from harness.launch.slurm.queue_view import queue_view

        return queue_view(root, grid)

    def cancel(self, root: Path, grid: str, wait_s: float) -> CancelReport | None:
        """scancel the grid's queued and running tasks (:mod:`harness.launch.slurm.cancel`)."""
        from harness.launch.slurm.cancel import cancel_grid  # torch, via the row writer

        return cancel_grid(root, grid, wait_s)


QUEUE = SlurmQueue()
"""The ``slurm`` backend's queue (:attr:`harness.launch.profile.Backend.queue`)."""
