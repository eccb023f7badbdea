"""What a finished (or stopped) run produced: the contract between ``train`` and ``results``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Every status a result row can carry. ``completed`` and ``diverged`` are results; the rest are
#: faults of the run's execution, recorded so that nothing is lost and ``--retry`` can pick them.
STATUSES = ("completed", "diverged", "failed", "oom", "timeout", "cancelled")


@dataclass(kw_only=True, slots=True)
class RunResult:
    """Metrics of one run. ``curve`` holds one dict per logged step (see ``CURVE_COLUMNS``)."""

    status: str
    """One of ``STATUSES``."""
    params: int | None = None
    """Total trainable parameters (tied weights counted once)."""
    val_loss: float | None = None
    """Mean cross-entropy (nats/token) on the fixed held-out tokens at the end of training."""
    val_ppl: float | None = None
    """exp(val_loss)."""
    train_loss: float | None = None
    """Mean training loss over the last logging interval."""
    steps_done: int = 0
    """Optimizer steps completed (< steps for a diverged run)."""
    tokens_seen: int = 0
    """Training tokens consumed."""
    wall_s: float | None = None
    """Wall-clock seconds of the run (all attempts, resumed runs included)."""
    tokens_per_s: float | None = None
    """Training throughput over the timed steps."""
    error: str | None = None
    """Why the run did not complete: the divergence reason or a traceback's last lines."""
    device: str | None = None
    """``cpu``, ``cuda:NVIDIA H100 80GB HBM3``, ..."""
    metrics: dict[str, float | None] = field(default_factory=dict)
    """Further named scalars: embedding metrics, MFU, timing breakdown; each becomes a column."""
    curve: list[dict[str, Any]] = field(default_factory=list)
    """Loss curve points: {step, tokens, train_loss, lr, val_loss (or None), elapsed_s}."""


#: Columns of a loss-curve file, in order.
CURVE_COLUMNS = ("step", "tokens", "train_loss", "lr", "val_loss", "elapsed_s")
