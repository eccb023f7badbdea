"""The local backend's :class:`~harness.launch.contract.Queue`: nothing is queued locally between
submissions. Local runs are children of the ``submit`` that started them (Ctrl-C on it stops
them, each checkpointed; :mod:`harness.launch.local.launcher`); a run being trained holds its
run lock, which ``submit`` and ``status`` check for every backend."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from harness.launch.contract import CancelReport, QueueView


class LocalQueue:
    """See the module docstring."""

    def queued(self, root: Path, grid: str, run_ids: Collection[str]) -> set[str]:
        """None: a local run is either being trained (its lock is held) or not started."""
        return set()

    def view(self, root: Path, grid: str) -> QueueView | None:
        """None: no local tasks wait in a queue."""
        return None

    def cancel(self, root: Path, grid: str, wait_s: float) -> CancelReport | None:
        """None: nothing queued to cancel (a local submit is stopped by its own Ctrl-C)."""
        return None


QUEUE = LocalQueue()
"""The ``local`` backend's queue (:attr:`harness.launch.profile.Backend.queue`)."""
