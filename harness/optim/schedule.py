"""Learning-rate schedules: linear warmup from 0, then a decay to a floor ``lr_min``.

Each schedule is a pure function ``(step, optim, steps) -> lr`` of the run's optimizer section
and its total steps, registered in ``SCHEDULES``; step counts from 0 (the lr used for the first
update is ``schedule(0, ...)``). Torch-free.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from harness.core.config import OptimConfig, RunConfig
from harness.core.registry import Registry

Schedule = Callable[[int, OptimConfig, int], float]
"""``(step, optimizer section, total steps) -> learning rate``."""


def _warmup(step: int, o: OptimConfig) -> float | None:
    if o.warmup_steps and step < o.warmup_steps:
        return o.lr * (step + 1) / o.warmup_steps
    return None


def _progress(step: int, o: OptimConfig, steps: int) -> float:
    """Fraction of the decay done after warmup: 0 at its first step, 1 at the last step."""
    span = max(1, steps - o.warmup_steps - 1)
    return min(1.0, (step - o.warmup_steps) / span)


def cosine(step: int, o: OptimConfig, steps: int) -> float:
    """Warmup, then cosine from ``lr`` to ``lr_min`` at the last step."""
    w = _warmup(step, o)
    if w is not None:
        return w
    return o.lr_min + 0.5 * (o.lr - o.lr_min) * (
        1.0 + math.cos(math.pi * _progress(step, o, steps))
    )


def linear(step: int, o: OptimConfig, steps: int) -> float:
    """Warmup, then linear decay from ``lr`` to ``lr_min`` at the last step."""
    w = _warmup(step, o)
    if w is not None:
        return w
    return o.lr + (o.lr_min - o.lr) * _progress(step, o, steps)


def constant(step: int, o: OptimConfig, steps: int) -> float:
    """Warmup, then constant ``lr`` (``lr_min`` unused)."""
    w = _warmup(step, o)
    return o.lr if w is None else w


SCHEDULES: Registry[Schedule] = Registry(
    "schedule", {"cosine": cosine, "linear": linear, "constant": constant}
)
"""Every schedule a run may name."""


def lr_at(step: int, run: RunConfig) -> float:
    """The learning rate of ``run`` at optimizer step ``step``."""
    return SCHEDULES[run.optim.schedule](step, run.optim, run.data.steps)
