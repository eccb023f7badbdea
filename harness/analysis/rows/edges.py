"""Is a tuned value on the edge of its searched range, and which value to add next?

Every numeric tuning axis is checked: learning rate, betas and momentum, epsilon, weight decay,
clip values, the embedding lr factor, an optimizer's own numeric hyperparameters. The next value
continues the grid's own spacing on the axis's natural scale: log for learning rates, 1 - x on a
log scale for decay rates (0.9, 0.99, 0.999 -> 0.9999), linear otherwise. An axis not declared by
the harness (an optimizer's own hyperparameter) is taken to be log-spaced when its values are all
positive and evenly spaced in log rather than linearly (two values: a ratio of at least
:data:`LOG_RATIO`).

A next value outside the axis's domain means the edge is a natural bound (momentum 0, weight
decay 0): then the bound itself is suggested if it was not searched, else the edge is closed. A
linear axis searched only at values >= 0 is taken to be bounded by 0 (a mixing weight of 0.25 is
next tried at 0, not at -0.25). On a log axis that holds 0 (weight decay {0, x}), 0 is the lower
edge: a best at 0 is closed, and a best at x with only 0 below it is an open upper edge whose
next value is x * :data:`ZERO_STEP` (no ratio to continue).

A value tried beyond the best, whether it trained or diverged, closes that side: the searched
values passed in are every value tried on the line through the best in its cell (the other tuned
axes held at the best's values, :func:`harness.analysis.rows.tuning.line_values`), diverged runs
included.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import SupportsFloat, TypeGuard

from harness.core.catalogue import AXIS_SCALES, FIELDS
from harness.core.fields import Scale


@dataclass(frozen=True, slots=True)
class AxisScale:
    """How an axis is spaced and where it is defined."""

    forward: Callable[[float], float]
    """Value -> coordinate in which the grid is evenly spaced."""
    inverse: Callable[[float], float]
    """Coordinate -> value."""
    low: float
    """Smallest valid value (inclusive)."""
    high: float
    """Largest valid value (exclusive)."""


_LOG = AxisScale(forward=math.log, inverse=math.exp, low=0.0, high=math.inf)
_DECAY = AxisScale(
    forward=lambda x: math.log(1.0 - x), inverse=lambda u: 1.0 - math.exp(u), low=0.0, high=1.0
)
_LINEAR = AxisScale(forward=float, inverse=float, low=-math.inf, high=math.inf)
_NON_NEGATIVE = AxisScale(forward=float, inverse=float, low=0.0, high=math.inf)

SPACINGS: dict[Scale, AxisScale] = {Scale.LOG: _LOG, Scale.DECAY: _DECAY, Scale.LINEAR: _LINEAR}
"""The arithmetic of each declared sweep scale (``harness.core.fields.Scale``)."""

ZERO_STEP = 10.0
"""Factor from x to the next value on a log axis searched only at {0, x} (one decade)."""
LOG_RATIO = 4.0
"""Smallest ratio of two positive values of an undeclared axis read as log-spaced."""

SIDES = ("smallest", "largest")
"""Which end of the searched values a best sits on."""


@dataclass(frozen=True, slots=True)
class Edge:
    """A best value on an open edge of its axis's searched values."""

    axis: str
    """The column."""
    best: float
    """The best configuration's value."""
    side: str
    """``smallest`` or ``largest`` (:data:`SIDES`)."""
    next: float
    """The value to try next, beyond ``best`` on the axis's spacing."""

    def note(self) -> str:
        """``lr=0.001 is the largest tried: add 0.00333``."""
        return f"{self.axis}={_plain(self.best)} is the {self.side} tried: add {_plain(self.next)}"


def axis_scale(axis: str, values: Sequence[float]) -> AxisScale:
    """The spacing of ``axis``: its declared scale, else inferred from its (sorted, distinct)
    ``values`` (module doc); a linear axis searched at values >= 0 is bounded by 0."""
    declared = AXIS_SCALES.get(axis)
    if declared is None and _looks_log(values):
        declared = Scale.LOG
    scale = SPACINGS[declared or Scale.LINEAR]
    if scale is _LINEAR and values[0] >= 0:
        return _NON_NEGATIVE
    return scale


def _looks_log(values: Sequence[float]) -> bool:
    if values[0] <= 0:
        return False
    if len(values) == 2:
        return values[1] / values[0] >= LOG_RATIO
    logs = [math.log(v) for v in values]
    return _spread(logs) < _spread(list(values))


def _spread(xs: Sequence[float]) -> float:
    """Relative spread of the gaps between consecutive values (0: evenly spaced)."""
    gaps = [b - a for a, b in itertools.pairwise(xs)]
    mean = sum(gaps) / len(gaps)
    return max(abs(g - mean) for g in gaps) / mean


def _next_value(scale: AxisScale, edge: float, neighbour: float) -> float | None:
    try:
        u_edge, u_nb = scale.forward(edge), scale.forward(neighbour)
        nxt = scale.inverse(2 * u_edge - u_nb)
    except (ValueError, OverflowError):  # log(0): the edge is a bound of the domain
        return None
    if not scale.low <= nxt < scale.high or nxt in (edge, neighbour):
        return None
    return nxt


def open_edge(axis: str, searched: Sequence[object], best: object) -> Edge | None:
    """The open edge ``best`` sits on among the ``searched`` numeric values, if any.

    Args:
        axis: the column name.
        searched: the distinct values tried in the cell (diverged runs included; NULLs and
            non-numbers ignored).
        best: the best configuration's value.

    Returns:
        None when ``best`` is inside the searched range, on a natural bound of the axis, not a
        number, or the axis was not searched (fewer than two values); else the edge, with the
        next value rounded to 3 significant digits (more when needed to tell it from ``best``)
        and to an integer on an integer axis.
    """
    nums = sorted({float(v) for v in searched if _is_number(v)})
    if len(nums) < 2 or not _is_number(best):
        return None
    b = float(best)
    if b not in (nums[0], nums[-1]):
        return None
    scale = axis_scale(axis, nums)
    side, neighbour = ("smallest", nums[1]) if b == nums[0] else ("largest", nums[-2])
    nxt = _next_value(scale, b, neighbour)
    if nxt is None and scale is _LOG and neighbour == 0.0 and b > 0:  # {0, x}: best at x
        nxt = b * ZERO_STEP
    if nxt is None and side == "smallest" and scale.low > -math.inf and b > scale.low:
        nxt = scale.low
    if nxt is None:
        return None
    integer = _integer_axis(axis, searched)
    return Edge(axis, b, side, _rounded(nxt, b, scale, integer))


def edge_note(axis: str, searched: Sequence[object], best: object) -> str:
    """A note when ``best`` sits on an open edge of the ``searched`` values (see
    :func:`open_edge`): ``""`` when not, else e.g. ``"lr=0.001 is the largest tried: add
    0.00333"``."""
    edge = open_edge(axis, searched, best)
    return "" if edge is None else edge.note()


def _integer_axis(axis: str, searched: Sequence[object]) -> bool:
    declared = FIELDS.get(axis)
    if declared is not None:
        return declared.type is int
    return all(isinstance(v, int) or type(v).__name__.startswith("int") for v in searched)


def _plain(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(x)


def _rounded(x: float, edge: float, scale: AxisScale, integer: bool) -> float:
    """``x`` with 3 significant digits, or more when needed to tell it from ``edge``; on an
    integer axis the nearest integer other than ``edge``."""
    if abs(x) < 1e-12 * max(abs(edge), 1.0):  # float noise around 0 (1 - exp(log 1))
        x = 0.0
    if integer:
        step = round(x) - edge
        return float(round(x)) if step else edge + math.copysign(1.0, x - edge)
    for digits in range(3, 13):
        s = float(f"{x:.{digits}g}")
        if s != edge and scale.low <= s < scale.high:
            return s
    return x


def _is_number(v: object) -> TypeGuard[SupportsFloat]:
    if isinstance(v, bool) or v is None:
        return False
    try:
        return math.isfinite(float(v))  # type: ignore[arg-type]  # any value: float() says
    except (TypeError, ValueError):
        return False
