"""Each arm's configurations: the same number for every arm, from each arm's search space.

Every arm (each baseline, and the candidate) gets, in every cell, ``lr_points`` learning rates
log-spaced over its lr range, times ``settings`` settings of its other hyperparameters:

1. the optimizer's defaults, with the protocol's weight decay (Marin's base configuration);
2. the same with weight decay 0 (the search includes no decay);
3. onwards: quasi-random points of the search space (an unscrambled Halton sequence over the
   log ranges, AlgoPerf's quasi-random search), the same points for every arm that searches
   the same keys over the same ranges.

So the number of configurations is equal by construction; extension then moves only the lr
(Marin re-tunes lr at every scale), for every arm by the same rule.

The candidate's search space: a key named in the protocol's ``candidate: search`` takes that
range; otherwise a key a baseline searches takes the first such baseline's range (a candidate
that reads AdamW's hyperparameters is searched as AdamW is); otherwise its own float
hyperparameters with a positive default are searched over ``[default / f, default * f]`` (of
``1 - default`` for a decay rate in [0.5, 1)). A run field it reads (``beta1``, ``momentum``)
that no baseline searches, and every key whose default is 0, stay at its default: a momentum of
0 switched on would bench another optimizer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.bench.protocol import ONE_MINUS, Family, LogRange, Protocol
from harness.core.errors import UserError
from harness.optim.registry import get_spec
from harness.optim.spec import OptimizerSpec

LR = "lr"
WEIGHT_DECAY = "weight_decay"


@dataclass(frozen=True, slots=True)
class Arm:
    """One arm of the bench: its label, optimizer and configurations."""

    label: str
    """The grid's ``label`` of its runs."""
    optimizer: str
    """The optimizer as the grid names it (a file reference made absolute)."""
    search: tuple[tuple[str, LogRange], ...]
    """The keys searched and their ranges (``lr``, ``weight_decay``, ``1-beta1``, ...)."""
    lrs: tuple[float, ...]
    """The learning rates tried per setting."""
    settings: tuple[Mapping[str, float], ...]
    """Grid key -> value of each setting of the other hyperparameters."""
    candidate: bool = False
    """Whether this arm is the candidate."""

    @property
    def configs(self) -> int:
        """Configurations per cell before extension."""
        return len(self.lrs) * len(self.settings)


def _tunable(spec: OptimizerSpec) -> dict[str, float]:
    """Key name -> positive float default of the run fields and own hyperparameters an
    optimizer takes (``1-beta1`` for a decay rate in [0.5, 1))."""
    values: dict[str, Any] = dict(spec.fields)
    values.update({h.name: h.default for h in spec.hyperparameters if h.type is float})
    out = {}
    for name, d in values.items():
        if isinstance(d, bool) or not isinstance(d, int | float) or d <= 0:
            continue
        out[f"{ONE_MINUS}{name}" if 0.5 <= d < 1 else name] = float(d)
    return out


def _center(key: str, default: float) -> float:
    """A key's value at the optimizer's default (1 - default for a ``1-`` key)."""
    return 1 - default if key.startswith(ONE_MINUS) else default


def _settings(
    keys: list[tuple[str, LogRange, float]], n: int, weight_decay: float
) -> tuple[dict[str, float], ...]:
    """``n`` settings over ``keys`` ((key, range, center) sorted by key; module docstring)."""
    from scipy.stats import qmc

    def as_grid(values: Mapping[str, float]) -> dict[str, float]:
        out = {}
        for k, v in values.items():
            name = k.removeprefix(ONE_MINUS)
            out[name] = float(f"{1 - v:.6g}") if k.startswith(ONE_MINUS) else v
        return out

    center = {k: c for k, _, c in keys if k != WEIGHT_DECAY}
    settings = [as_grid({**center, WEIGHT_DECAY: weight_decay})]
    if n >= 2:
        settings.append(as_grid({**center, WEIGHT_DECAY: 0.0}))
    if n >= 3:
        points = qmc.Halton(d=len(keys), scramble=False).random(n - 1)[1:]  # (n - 2, d)
        for u in points:
            settings.append(
                as_grid({k: r.at(float(x)) for (k, r, _), x in zip(keys, u, strict=True)})
            )
    return tuple(settings)


def baseline_arm(family: Family, protocol: Protocol) -> Arm:
    """A baseline's arm: its search space as the protocol writes it.

    Raises:
        UserError: a search key the optimizer does not take.
    """
    spec = get_spec(family.optimizer)
    defaults = _tunable(spec)
    keys = []
    for key, r in sorted(family.search):
        if key == LR:
            continue
        if key != WEIGHT_DECAY and key not in defaults:
            valid = ", ".join(sorted({LR, WEIGHT_DECAY, *defaults}))
            raise UserError(
                f"{protocol.path}: baselines: {family.label}: search: {key!r} is not "
                f"a hyperparameter {family.optimizer} takes with a positive default; "
                f"valid: {valid}"
            )
        center = protocol.weight_decay if key == WEIGHT_DECAY else _center(key, defaults[key])
        keys.append((key, r, center))
    lr = family.range(LR)
    assert lr is not None  # the protocol requires it
    return Arm(
        family.label,
        family.optimizer,
        family.search,
        lr.points(protocol.budget.lr_points),
        _settings(keys, protocol.budget.settings, protocol.weight_decay),
    )


def candidate_arm(optimizer: str, label: str, protocol: Protocol) -> Arm:
    """The candidate's arm (module docstring: where each range comes from)."""
    spec = get_spec(optimizer)
    own = {h.name for h in spec.hyperparameters}
    override = dict(protocol.candidate.search)
    f = protocol.candidate.range_factor
    ranges: dict[str, LogRange] = {}
    keys = []
    for key, default in sorted({**_tunable(spec), LR: 0.0, WEIGHT_DECAY: 0.0}.items()):
        r = override.get(key) or _from_baselines(key, protocol)
        if r is None and key.removeprefix(ONE_MINUS) in own:
            r = _around(_center(key, default), f, cap=0.99 if key.startswith(ONE_MINUS) else None)
        if r is None:
            continue  # a run field no baseline searches: left at its default
        ranges[key] = r
        if key != LR:
            center = protocol.weight_decay if key == WEIGHT_DECAY else _center(key, default)
            keys.append((key, r, center))
    return Arm(
        label,
        optimizer,
        tuple(sorted(ranges.items())),
        ranges[LR].points(protocol.budget.lr_points),
        _settings(keys, protocol.budget.settings, protocol.weight_decay),
        candidate=True,
    )


def _around(center: float, factor: float, cap: float | None) -> LogRange:
    """[center / factor, center * factor], the top capped at ``cap`` (a ``1-`` key below 1)."""
    high = center * factor if cap is None else min(center * factor, cap)
    return LogRange(float(f"{center / factor:.4g}"), float(f"{high:.4g}"))


def _from_baselines(key: str, protocol: Protocol) -> LogRange | None:
    """The range of the first baseline that searches ``key``."""
    for family in protocol.baselines:
        r = family.range(key)
        if r is not None:
            return r
    return None
