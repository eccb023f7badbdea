"""What an optimizer asks of the loop that drives it, beyond ``step()``: modes and closures.

- **Modes.** A schedule-free optimizer (``schedulefree``'s ``AdamWScheduleFree``) holds two
  points: the one gradients are taken at (train mode) and the average that is evaluated (eval
  mode). It must be switched with ``optimizer.eval()`` before every evaluation and with
  ``optimizer.train()`` before training steps (:class:`Modal`, :func:`evaluating`).
- **Closures.** An optimizer of the SAM family takes a second gradient at a perturbed point
  within one step: its ``step`` calls a closure that recomputes the loss and the gradients on
  the same batch (:func:`needs_closure`). Each call is one more forward and backward pass.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Modal(Protocol):
    """An optimizer with a train mode and an eval mode (schedule-free optimizers)."""

    def train(self) -> Any:
        """Switch to the point gradients are taken at."""

    def eval(self) -> Any:
        """Switch to the point that is evaluated."""


@runtime_checkable
class TwoStep(Protocol):
    """An optimizer of pytorch-optimizer's SAM family: ``step(closure)`` runs ``first_step``
    (ascend), the closure (gradients at the perturbed point) and ``second_step``."""

    def first_step(self, zero_grad: bool = False) -> Any:
        """Move to the perturbed point."""

    def second_step(self, zero_grad: bool = False) -> Any:
        """Step from the original point with the perturbed point's gradients."""


def to_train_mode(optimizer: object) -> None:
    """Put a :class:`Modal` optimizer in train mode (no-op for any other)."""
    if isinstance(optimizer, Modal):
        optimizer.train()


@contextmanager
def evaluating(optimizer: object) -> Iterator[None]:
    """The block runs with a :class:`Modal` optimizer in eval mode, and in train mode after."""
    if not isinstance(optimizer, Modal):
        yield
        return
    optimizer.eval()
    try:
        yield
    finally:
        optimizer.train()


def needs_closure(optimizer: object) -> bool:
    """Whether ``optimizer.step`` needs a closure: a :class:`TwoStep` optimizer, or a ``step``
    whose ``closure`` argument has no default."""
    if isinstance(optimizer, TwoStep):
        return True
    step = getattr(type(optimizer), "step", None)
    if step is None:
        return False
    closure = inspect.signature(step).parameters.get("closure")
    return closure is not None and closure.default is inspect.Parameter.empty
