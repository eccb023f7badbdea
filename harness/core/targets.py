"""A target: the loss value a run's curve must reach, for tokens- and time-to-target.

Grids declare one (``target: 3.9`` on the training loss, or ``target: {val_loss: 3.9}``, and
under ``local:`` for laptop scale); ``harness analyze targets|profiles --target`` gives one on the
command line. Analysis reads the first point where the curve column is at or below the value
(:mod:`harness.analysis.stats.to_target`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from harness.core.errors import UserError

TARGET_COLUMNS = ("train_loss", "val_loss")
"""Curve columns a target may name (lower is better)."""
DEFAULT_TARGET_COLUMN = "train_loss"
"""The column of a target given as a bare number: the training loss, logged every
``log_every`` steps (``val_loss`` is in the curve only at evaluation points)."""


@dataclass(frozen=True, slots=True)
class Target:
    """A loss value to reach on one curve column."""

    column: str
    """The curve column (one of :data:`TARGET_COLUMNS`)."""
    value: float
    """The value to reach (at or below), in the column's unit (nats/token)."""

    def describe(self) -> str:
        """``train_loss <= 3.9``."""
        return f"{self.column} <= {self.value:g}"


def parse_target(spec: Any, where: str, column: str | None = None) -> Target:
    """A target from a grid's ``target:`` (a number, or ``{column: number}``) or from the
    command line (a number, with ``column`` given).

    Raises:
        UserError: naming ``where``, the bad value and the valid columns.
    """
    if isinstance(spec, dict):
        if len(spec) != 1:
            raise UserError(f"{where}: expected one {{column: value}}, got {spec!r}")
        ((column, spec),) = spec.items()
    column = DEFAULT_TARGET_COLUMN if column is None else column
    if column not in TARGET_COLUMNS:
        raise UserError(
            f"{where}: unknown target column {column!r}; valid: {', '.join(TARGET_COLUMNS)}"
        )
    try:
        value = float(spec)
    except (TypeError, ValueError):
        raise UserError(f"{where}: expected a number, got {spec!r}") from None
    if isinstance(spec, bool) or not math.isfinite(value):
        raise UserError(f"{where}: expected a finite number, got {spec!r}")
    return Target(column, value)
