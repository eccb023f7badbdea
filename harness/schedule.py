"""Learning-rate schedules: linear warmup from 0, then a decay to a floor ``lr_min``.

Each schedule is a pure function ``(step, run) -> lr`` registered in ``SCHEDULES``; step counts
from 0 (the lr used for the first update is ``schedule(0, run)``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

Schedule = Callable[[int, Any], float]


def _warmup(step: int, run: Any) -> float | None:
    if run.warmup_steps and step < run.warmup_steps:
        return run.lr * (step + 1) / run.warmup_steps
    return None


def cosine(step: int, run: Any) -> float:
    """Warmup, then cosine from ``lr`` to ``lr_min`` at the last step."""
    w = _warmup(step, run)
    if w is not None:
        return w
    span = max(1, run.steps - run.warmup_steps - 1)
    progress = min(1.0, (step - run.warmup_steps) / span)
    return run.lr_min + 0.5 * (run.lr - run.lr_min) * (1.0 + math.cos(math.pi * progress))


def linear(step: int, run: Any) -> float:
    """Warmup, then linear decay from ``lr`` to ``lr_min`` at the last step."""
    w = _warmup(step, run)
    if w is not None:
        return w
    span = max(1, run.steps - run.warmup_steps - 1)
    progress = min(1.0, (step - run.warmup_steps) / span)
    return run.lr + (run.lr_min - run.lr) * progress


def constant(step: int, run: Any) -> float:
    """Warmup, then constant ``lr`` (``lr_min`` unused)."""
    w = _warmup(step, run)
    return run.lr if w is None else w


SCHEDULES: dict[str, Schedule] = {"cosine": cosine, "linear": linear, "constant": constant}


def lr_at(step: int, run: Any) -> float:
    """The learning rate of ``run`` at optimizer step ``step``."""
    return SCHEDULES[run.schedule](step, run)
