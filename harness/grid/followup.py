"""The grid sections that plan runs after the grid's own: confirmation seeds and edge extension.

Confirmation seeds, in ``seeds:``::

    seeds: {tune: 3, confirm: 3}       # tune on seeds 0-2; confirm on 3-5
    seeds: {tune: [0, 1, 2], confirm: [10, 11]}

The grid expands on the tuning seeds (``seeds: N`` and ``seeds: [..]`` mean what they always
meant: tuning seeds, no confirmation). ``harness submit --confirm`` then trains each cell's
selected configuration on the confirmation seeds; an int ``confirm`` counts on from the largest
tuning seed.

Edge extension, ``extend:`` (all keys optional)::

    extend:
      axes: [lr, weight_decay]         # default: every numeric tuned axis that varies
      rounds: 3                        # most rounds of --extend (default 3)
      bounds: {lr: [1.0e-5, 1.0]}      # hard limits no extension crosses

A ``local:`` section may hold its own ``extend:``, merged key by key over this one at local scale.

``harness submit --extend`` plans the next value beyond each best that sits on an open edge (see
``harness.analysis.rows.edges``), for that cell and arm only, and repeats after they finish.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from harness.core.catalogue import FIELDS, TUNED
from harness.core.errors import UserError

SEED_KEYS = ("tune", "confirm")
"""Keys of a ``seeds:`` mapping."""
EXTEND_KEYS = ("axes", "rounds", "bounds")
"""Keys of the ``extend:`` section."""
DEFAULT_ROUNDS = 3
"""Rounds of ``--extend`` when the grid does not say."""

NUMERIC_TUNED: tuple[str, ...] = tuple(
    n for n in TUNED if FIELDS[n].type in (int, float) and FIELDS[n].type is not bool
)
"""Run fields an extension may move: the tuned numeric ones."""


@dataclass(frozen=True, slots=True)
class ExtendSpec:
    """How ``--extend`` may grow a grid (the ``extend:`` section)."""

    axes: tuple[str, ...] = ()
    """The axes extended; empty: every numeric tuned axis that varies in a cell."""
    rounds: int = DEFAULT_ROUNDS
    """Most rounds (one round: the next value beyond each open edge, trained on the seeds)."""
    bounds: tuple[tuple[str, float, float], ...] = ()
    """(axis, low, high): no extension plans a value outside [low, high]."""

    def allows(self, axis: str) -> bool:
        """Whether ``axis`` may be extended."""
        return not self.axes or axis in self.axes

    def limits(self, axis: str) -> tuple[float, float]:
        """The hard bounds of ``axis`` (-inf, inf when none)."""
        for name, low, high in self.bounds:
            if name == axis:
                return low, high
        return -math.inf, math.inf


def parse_extend(value: Any, file: str, own: Collection[str]) -> ExtendSpec | None:
    """The ``extend:`` section (None when the grid has none), its keys checked by the caller.

    Args:
        value: the section as read.
        file: the grid file, for messages.
        own: the grid's optimizers' own hyperparameters (extendable too).

    Raises:
        UserError: an axis that is not a numeric tuned field or own
            hyperparameter, a non-positive ``rounds``, or bounds that are not [low, high].
    """
    if value is None:
        return None
    valid = (*NUMERIC_TUNED, *sorted(own))
    axes = value.get("axes") or []
    if not isinstance(axes, list):
        raise UserError(f"{file}: extend.axes: expected a list of axes, got {axes!r}")
    for a in [*axes, *(value.get("bounds") or {})]:
        if a not in valid:
            raise UserError(
                f"{file}: extend: {a!r} is not an extendable axis; valid: {', '.join(valid)}"
            )
    rounds = value.get("rounds", DEFAULT_ROUNDS)
    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
        raise UserError(f"{file}: extend.rounds: expected a positive int, got {rounds!r}")
    return ExtendSpec(tuple(axes), rounds, _bounds(value.get("bounds") or {}, file))


def _bounds(value: Any, file: str) -> tuple[tuple[str, float, float], ...]:
    if not isinstance(value, dict):
        raise UserError(f"{file}: extend.bounds: expected axis: [low, high], got {value!r}")
    out = []
    for axis, pair in value.items():
        ok = isinstance(pair, list) and len(pair) == 2 and all(_number(x) for x in pair)
        if not ok or not all(math.isfinite(x) for x in pair) or float(pair[0]) >= float(pair[1]):
            raise UserError(
                f"{file}: extend.bounds.{axis}: expected [low, high], finite numbers "
                f"with low < high, got {pair!r}"
            )
        out.append((axis, float(pair[0]), float(pair[1])))
    return tuple(out)


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def tune_part(spec: Any, file: str) -> Any:
    """The tuning seeds of a ``seeds:`` value (the value itself unless it is a mapping, whose
    keys the caller checked).

    Raises:
        UserError: a mapping without ``tune``.
    """
    if not isinstance(spec, dict):
        return spec
    if "tune" not in spec:
        raise UserError(f"{file}: seeds: a mapping needs 'tune' (and 'confirm')")
    return spec["tune"]


def confirm_seeds(spec: Any, tune: list[int], file: str) -> tuple[int, ...]:
    """The confirmation seeds of a ``seeds:`` value: none unless it is a mapping with
    ``confirm``; an int n counts on from the largest tuning seed.

    Raises:
        UserError: not a positive int or a list of ints, a repeated seed, or one shared with
            the tuning seeds.
    """
    if not isinstance(spec, dict) or spec.get("confirm") is None:
        return ()
    value = spec["confirm"]
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        start = max(tune) + 1
        return tuple(range(start, start + value))
    if not (
        isinstance(value, list)
        and value
        and all(isinstance(s, int) and not isinstance(s, bool) for s in value)
    ):
        raise UserError(
            f"{file}: seeds.confirm: expected a positive int or a non-empty list of "
            f"ints, got {value!r}"
        )
    if len(set(value)) != len(value):
        raise UserError(f"{file}: seeds.confirm: repeated seed in {value}")
    shared = sorted(set(value) & set(tune))
    if shared:
        raise UserError(
            f"{file}: seeds.confirm: seed(s) {shared} are also tuning seeds; "
            "confirmation seeds must be fresh"
        )
    return tuple(value)
