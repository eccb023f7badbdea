"""What a finished (or stopped) run produced: the contract between the training loop and the
result store, and the statuses a result row can carry."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    """The status of a result row. ``completed`` and ``diverged`` are results; the rest are
    faults of the run's execution, recorded so that nothing is lost and ``--retry`` can pick
    them."""

    COMPLETED = "completed"
    """Trained to the end and evaluated."""
    DIVERGED = "diverged"
    """Stopped because its loss blew up: a result (the configuration does not train)."""
    FAILED = "failed"
    """An exception, or its process died."""
    OOM = "oom"
    """Out of memory (CUDA, host, or SLURM's memory limit)."""
    TIMEOUT = "timeout"
    """Hit the time limit more often than the launcher requeues it."""
    CANCELLED = "cancelled"
    """Cancelled (``harness cancel``, scancel)."""


STATUSES: tuple[str, ...] = tuple(s.value for s in Status)
"""Every status, in order."""

RESULT_STATUSES: tuple[str, ...] = (Status.COMPLETED.value, Status.DIVERGED.value)
"""Statuses that are results; the others are faults of the execution."""


@dataclass(kw_only=True, slots=True)
class RunResult:
    """What one run produced. ``metrics`` holds every measured value by its catalogued name
    (``harness.metrics.embedding.catalogue.METRICS``); ``curve`` one dict per logged step."""

    status: Status
    """How the run ended (a status's string, as a row or a spill file holds it, is taken as
    that status)."""
    params: int | None = None
    """Total trainable parameters (tied weights counted once)."""
    steps_done: int = 0
    """Optimizer steps completed (< steps for a diverged or interrupted run)."""
    tokens_seen: int = 0
    """Training tokens consumed."""
    error: str | None = None
    """Why the run did not complete: the divergence reason or a traceback's last lines."""
    device: str | None = None
    """``cpu``, ``cuda:NVIDIA H100 80GB HBM3``, ..."""
    metrics: dict[str, float | None] = field(default_factory=dict)
    """Metric name -> value (``val_loss``, ``wall_s``, ``iso``, ``mfu``, ...); each a column."""
    curve: list[dict[str, Any]] = field(default_factory=list)
    """Loss-curve points, each with the keys of ``CURVE_COLUMNS``."""
    branch_of: str | None = None
    """The run_id whose stable phase this run started from (a branch,
    :mod:`harness.grid.branches`); None: it trained from step 0 itself."""
    steps_trained: int | None = None
    """Steps this run trained itself (``steps_done`` less a branch's start); None: not
    recorded (a row written before branches, or imported)."""

    def __post_init__(self) -> None:
        """Raises ValueError: ``status`` is no :class:`Status` (naming the valid ones)."""
        if not isinstance(self.status, Status):
            if self.status not in STATUSES:
                raise ValueError(f"unknown status {self.status!r}; valid: {', '.join(STATUSES)}")
            self.status = Status(self.status)

    def metric(self, name: str) -> float | None:
        """One metric's value (None when not measured)."""
        return self.metrics.get(name)


OUTCOME: dict[str, type] = {
    "status": str,
    "params": int,
    "steps_done": int,
    "tokens_seen": int,
    "error": str,
    "branch_of": str,
    "steps_trained": int,
}
"""The row columns of :class:`RunResult` besides its metrics, with their types (``device`` is a
provenance column, ``curve`` a file of its own). A column added later (``branch_of``,
``steps_trained``) reads NULL in the rows written before it: the store reads files by name."""

CURVE_COLUMNS = ("step", "tokens", "train_loss", "lr", "val_loss", "elapsed_s")
"""Columns of a loss-curve file, in order (each point a dict with these keys)."""
