"""What a few steps of an optimizer say of it, asked in the preflight's child process."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Probed:
    """What a few steps of an optimizer on a small tensor say (:mod:`harness.launch.probe`)."""

    lr: float | None
    """Its constructor's default lr (None: none)."""
    decay: str
    """Its weight-decay convention by default: ``decoupled``, ``independent``, ``coupled`` or
    ``none``."""
    flags: Mapping[str, Mapping[bool, str]]
    """Each boolean argument that switches the decay -> value -> the convention it gives."""
    multipliers: tuple[str, ...]
    """Hyperparameters that multiply the lr (doubled: the step of the lr doubled)."""
    bounded: Mapping[str, tuple[float, float]]
    """Each range asked -> the part of it the constructor accepts."""


def probe_optimizer(optimizer: str, ranges: Mapping[str, tuple[float, float]]) -> Probed:
    """Probe ``optimizer`` (:class:`Probed`) in the preflight's child process, with ``ranges``
    (hyperparameter -> (low, high)) checked against its constructor.

    Raises:
        UserError: the probe failed (the optimizer cannot be built or stepped), in a line.
    """
    import json

    from harness.core.errors import UserError
    from harness.launch.sandbox import Limits, run_isolated

    [answer] = run_isolated(
        "harness.launch.probe:probe", [(optimizer, dict(ranges))], Limits.from_env()
    )
    try:
        got = json.loads(answer or "")
    except ValueError:
        raise UserError(f"{optimizer}: probing its steps failed: {answer}") from None
    return Probed(
        got["lr"],
        got["decay"],
        {k: {v == "True": c for v, c in m.items()} for k, m in got["flags"].items()},
        tuple(got["multipliers"]),
        {k: (float(lo), float(hi)) for k, (lo, hi) in got["bounded"].items()},
    )
