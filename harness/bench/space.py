"""Each arm's configurations: the same number for every arm, from each arm's search space.

Every arm (each baseline, and the candidate) gets, in every cell, ``lr_points`` learning rates
log-spaced over its lr range, times ``settings`` settings of its other hyperparameters:

1. the optimizer's defaults, with the protocol's weight decay (Marin's base configuration);
2. the same with weight decay 0 (the search includes no decay);
3. onwards: quasi-random points of the search space (a scrambled Halton sequence over the log
   ranges, seeded, AlgoPerf's quasi-random search; unscrambled, its dimensions of large prime
   bases rise together), the same points for every arm that searches the same keys over the
   same ranges.

So the number of configurations is equal by construction; extension then moves only the lr
(Marin re-tunes lr at every scale), for every arm by the same rule.

The candidate's search space: a key named in the protocol's ``candidate: search`` takes that
range; otherwise a key a baseline searches takes the first such baseline's range (a candidate
that reads AdamW's hyperparameters is searched as AdamW is); otherwise its own float
hyperparameters with a positive finite default are searched over ``[default / f, default * f]``
(of ``1 - default`` for a decay rate in [0.5, 1)). A run field it reads (``beta1``,
``momentum``) that no baseline searches, and every key whose default is 0, stay at its default:
a momentum of 0 switched on would bench another optimizer. Then a few steps of the candidate on
a small tensor (:func:`harness.api.probe_optimizer`, in the preflight's child process) correct
that space:

- a default lr outside the baseline's lr range (Prodigy's 1.0) gets a range as wide, centred on
  it (unless the protocol gives the candidate its own);
- a hyperparameter that multiplies the lr (AdamAtan2's ``a``) stays at its default: searching it
  would search the lr twice;
- an end of a range the constructor refuses (``assert cautious_factor <= 1``) is moved inside;
- the weight-decay convention: the protocol's is decoupled (``w -= lr * wd * w``); an optimizer
  whose default differs (ADOPT, Adan: L2 through the gradient) gets the flag that switches it
  (``weight_decouple=True``) in every setting, said in the plan; with no such flag the
  difference is a caveat in the plan and beside the verdict.

Each range keeps where it came from (:attr:`Arm.sources`): the dry run prints it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.bench.protocol import ONE_MINUS, Family, LogRange, Protocol
from harness.core.errors import UserError
from harness.optim.registry import get_spec
from harness.optim.spec import OptimizerSpec
from harness.services import Probed

LR = "lr"
WEIGHT_DECAY = "weight_decay"
SEQUENCE_SEED = 0
"""The scrambled Halton sequence's seed: the same points for every arm and every bench."""
PROTOCOL_DECAY = "decoupled"
"""The convention a protocol's ``weight_decay`` means (PyTorch's AdamW: ``w -= lr * wd * w``)."""
CONVENTIONS = {
    "decoupled": "decoupled (w -= lr * wd * w)",
    "independent": "decoupled and independent of the lr (w -= wd * w)",
    "coupled": "coupled (added to the gradient, then scaled by the update, L2)",
    "none": "not at all (no weight decay taken)",
}
"""How each convention the probe tells (:mod:`harness.launch.probe`) reads."""


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
    sources: tuple[tuple[str, str], ...] = ()
    """Search key -> where its range came from (the protocol, a baseline, the default...)."""
    notes: tuple[str, ...] = ()
    """What the derivation did beyond the ranges (a multiplier of the lr left at its default,
    a decay convention switched to the protocol's), each in a line."""
    caveats: tuple[str, ...] = ()
    """What the bench cannot match (a decay that is not the protocol's convention) or runs
    otherwise (a schedule of the candidate's own): printed in the plan and beside the verdict."""
    schedule: Mapping[str, Any] = field(default_factory=dict)
    """Schedule fields this arm runs with instead of the base's (the protocol's
    ``candidate: schedules``)."""

    @property
    def configs(self) -> int:
        """Configurations per cell before extension."""
        return len(self.lrs) * len(self.settings)


def _tunable(spec: OptimizerSpec, base: Mapping[str, Any]) -> dict[str, float]:
    """Key name -> positive float default of the run fields and own hyperparameters an
    optimizer takes (``1-beta1`` for a decay rate in [0.5, 1)); a value the protocol's ``base``
    sets for every arm (``beta2: 0.95`` where runs are short) replaces the default."""
    values: dict[str, Any] = dict(spec.fields)
    values.update({h.name: h.default for h in spec.hyperparameters if h.type is float})
    values.update({k: v for k, v in base.items() if k in values and isinstance(v, float)})
    out = {}
    for name, d in values.items():
        if isinstance(d, bool) or not isinstance(d, int | float) or not 0 < d < math.inf:
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
        halton = qmc.Halton(d=len(keys), scramble=True, seed=SEQUENCE_SEED)
        points = halton.random(n - 2)  # (n - 2, d)
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
    defaults = _tunable(spec, protocol.base)
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
        sources=tuple((k, "the protocol") for k, _ in family.search),
    )


Prober = Callable[[str, Mapping[str, tuple[float, float]]], Probed]
"""``(optimizer, {hyperparameter: (low, high)})`` -> what one step of it says
(:func:`harness.api.probe_optimizer`)."""


def candidate_arm(
    optimizer: str, label: str, protocol: Protocol, prober: Prober | None = None
) -> Arm:
    """The candidate's arm (module docstring: where each range comes from; ``prober``: what
    its steps say of its lr default, multipliers, bounds and decay; None: nothing probed)."""
    spec = get_spec(optimizer)
    own = {h.name for h in spec.hyperparameters}
    override = dict(protocol.candidate.search)
    f = protocol.candidate.range_factor
    ranges: dict[str, LogRange] = {}
    sources: dict[str, str] = {}
    defaults = {**_tunable(spec, protocol.base), LR: 0.0, WEIGHT_DECAY: 0.0}
    for key, default in sorted(defaults.items()):
        r, sources[key] = override.get(key), "the protocol's candidate: search"
        if r is None and (r := _from_baselines(key, protocol)) is not None:
            sources[key] = f"baseline {_baseline_of(key, protocol)}"
        if r is None and key.removeprefix(ONE_MINUS) in own:
            r = _around(_center(key, default), f, cap=0.99 if key.startswith(ONE_MINUS) else None)
            sources[key] = f"its default {default:g}, x/ {f:g}"
        if r is None:
            del sources[key]
            continue  # a run field no baseline searches: left at its default
        ranges[key] = r
    notes: list[str] = []
    caveats: list[str] = []
    fixed: dict[str, Any] = {}
    if prober is not None:
        key_of = {k.removeprefix(ONE_MINUS): k for k in ranges if k.removeprefix(ONE_MINUS) in own}
        probed = prober(optimizer, {name: _values(k, ranges[k]) for name, k in key_of.items()})
        _centre_lr(ranges, sources, probed, protocol, override)
        for key in probed.multipliers:
            k = key_of[key]
            del ranges[k], sources[k]
            notes.append(
                f"{key}: a multiplier of the lr (one step with {key} doubled is the step with "
                f"the lr doubled): left at its default {defaults[k]:g}, not searched as a "
                "second lr"
            )
        for name, (low, high) in probed.bounded.items():
            k = key_of[name]
            if k in ranges and (low, high) != _values(k, ranges[k]):
                ranges[k] = _from_values(k, low, high)
                sources[k] += f"; the constructor refuses values beyond [{low:g}, {high:g}]"
        fixed, said, caveat = _decay(probed)
        notes += said
        caveats += caveat
    keys = [
        (k, r, protocol.weight_decay if k == WEIGHT_DECAY else _center(k, defaults[k]))
        for k, r in sorted(ranges.items())
        if k != LR
    ]
    settings = _settings(keys, protocol.budget.settings, protocol.weight_decay)
    if own_schedule := protocol.candidate.schedule_of(optimizer):
        fields = ", ".join(f"{k}: {v}" for k, v in own_schedule.items())
        caveats.append(
            f"schedule: the candidate runs its own ({fields}), as the protocol's candidate: "
            "schedules gives it; the baselines run the protocol's"
        )
    return Arm(
        label,
        optimizer,
        tuple(sorted(ranges.items())),
        ranges[LR].points(protocol.budget.lr_points),
        tuple({**s, **fixed} for s in settings),
        candidate=True,
        sources=tuple(sorted(sources.items())),
        notes=tuple(notes),
        caveats=tuple(caveats),
        schedule=own_schedule,
    )


def _values(key: str, r: LogRange) -> tuple[float, float]:
    """A range as the constructor's values (``1-x`` keys: ``(1 - high, 1 - low)``)."""
    if key.startswith(ONE_MINUS):
        return (float(f"{1 - r.high:.6g}"), float(f"{1 - r.low:.6g}"))
    return (r.low, r.high)


def _from_values(key: str, low: float, high: float) -> LogRange:
    """The inverse of :func:`_values`."""
    if key.startswith(ONE_MINUS):
        return LogRange(float(f"{1 - high:.4g}"), float(f"{1 - low:.4g}"))
    return LogRange(low, high)


def _centre_lr(
    ranges: dict[str, LogRange],
    sources: dict[str, str],
    probed: Probed,
    protocol: Protocol,
    override: Mapping[str, LogRange],
) -> None:
    """A default lr outside the baseline's range: the range, as wide, centred on it (Prodigy's
    1.0, by design); a range the protocol gives the candidate is kept."""
    lr, d = ranges[LR], probed.lr
    if LR in override or d is None or not 0 < d < math.inf or lr.low <= d <= lr.high:
        return
    half = math.sqrt(lr.high / lr.low)
    ranges[LR] = LogRange(float(f"{d / half:.4g}"), float(f"{d * half:.4g}"))
    sources[LR] = (
        f"centred on its default lr={d:g} (outside {sources[LR]}'s [{lr.low:g}, {lr.high:g}]), "
        "as wide"
    )


def _decay(probed: Probed) -> tuple[dict[str, bool], list[str], list[str]]:
    """The flag that matches the protocol's decay convention, the note saying so, and the
    caveat when none can."""
    if probed.decay == PROTOCOL_DECAY:
        return {}, [f"weight decay: {CONVENTIONS[PROTOCOL_DECAY]}, as the protocol's"], []
    said = f"its default applies it {CONVENTIONS.get(probed.decay, probed.decay)}"
    for flag, by_value in sorted(probed.flags.items()):
        for value, convention in by_value.items():
            if convention == PROTOCOL_DECAY:
                default = not value
                note = (
                    f"weight decay: its default ({flag}={default}) applies it "
                    f"{CONVENTIONS.get(probed.decay, probed.decay)}; {flag}={value} set in every "
                    f"setting to match the protocol's {CONVENTIONS[PROTOCOL_DECAY]}"
                )
                return {flag: value}, [note], []
    caveat = (
        f"weight decay: {said}, not the protocol's {CONVENTIONS[PROTOCOL_DECAY]}, and no "
        "argument of it switches that: its weight_decay values mean another regulariser than "
        "the baselines'"
    )
    return {}, [], [caveat]


def _baseline_of(key: str, protocol: Protocol) -> str:
    """The label of the first baseline that searches ``key``."""
    return next(f.label for f in protocol.baselines if f.range(key) is not None)


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
