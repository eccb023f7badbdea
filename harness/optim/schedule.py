"""Learning-rate schedules: linear warmup from 0, then a decay to a floor ``lr_min``.

Each schedule is a pure function ``(step, optim, steps) -> lr`` of the run's optimizer section
and its total steps, registered in ``SCHEDULES``; step counts from 0 (the lr used for the first
update is ``schedule(0, ...)``). A schedule that reads run fields of its own (``wsd``:
``decay_frac``, ``decay_shape``) lists them with their defaults in ``SCHEDULE_FIELDS``; grid
resolution fills them for its runs and sets them to None for the others. Torch-free.
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


DECAY_SHAPES: dict[str, Callable[[float], float]] = {
    "linear": lambda p: 1.0 - p,
    "cosine": lambda p: 0.5 * (1.0 + math.cos(math.pi * p)),
    "1-sqrt": lambda p: 1.0 - math.sqrt(p),
}
"""Shape of wsd's final decay: progress p in [0, 1] -> the fraction of ``lr - lr_min`` left
(1 at p = 0, 0 at p = 1); the keys are ``harness.core.config.DECAY_SHAPES``."""


def decay_steps(o: OptimConfig, steps: int) -> int:
    """Steps of wsd's final decay: ``decay_frac * steps`` rounded half up, at least 1, and at
    most the steps after warmup."""
    assert o.decay_frac is not None, "wsd needs decay_frac"
    wanted = max(1, math.floor(o.decay_frac * steps + 0.5))
    return min(wanted, max(1, steps - o.warmup_steps))


def wsd(step: int, o: OptimConfig, steps: int) -> float:
    """Warmup-stable-decay: warmup, then constant ``lr``, then over the last ``D =
    decay_steps(o, steps)`` steps a decay to ``lr_min`` of shape ``decay_shape``.

    The decay's k-th step (k = 1..D, step ``steps - D + k - 1``) has progress p = k / D, and lr
    ``lr_min + (lr - lr_min) * shape(p)``: exactly D steps run below ``lr``, and the last step
    runs at ``lr_min``.
    """
    w = _warmup(step, o)
    if w is not None:
        return w
    d = decay_steps(o, steps)
    k = step - (steps - d) + 1
    if k <= 0:
        return o.lr
    assert o.decay_shape is not None, "wsd needs decay_shape"
    return o.lr_min + (o.lr - o.lr_min) * DECAY_SHAPES[o.decay_shape](min(1.0, k / d))


SCHEDULES: Registry[Schedule] = Registry(
    "schedule", {"cosine": cosine, "linear": linear, "constant": constant, "wsd": wsd}
)
"""Every schedule a run may name."""

SCHEDULE_FIELDS: dict[str, dict[str, object]] = {
    "wsd": {"decay_frac": 0.2, "decay_shape": "1-sqrt"},
}
"""Run fields a schedule reads beyond ``lr``, ``warmup_steps`` and ``lr_min``, with the value
resolution gives them when a grid sets none (wsd: the last 20% of steps, 1-sqrt, the best
setting of Haegele et al. 2024, "Scaling Laws and Compute-Optimal Training Beyond Fixed Training
Durations"). Every such field is None in the runs of the other schedules."""


def lr_at(step: int, run: RunConfig) -> float:
    """The learning rate of ``run`` at optimizer step ``step``."""
    return SCHEDULES[run.optim.schedule](step, run.optim, run.data.steps)
