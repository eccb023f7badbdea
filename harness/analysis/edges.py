"""Is a tuned value on the edge of its searched range, and which value to add next?

The next value continues the grid's own spacing on the axis's natural scale: log for learning
rates, 1 - x on a log scale for decay rates (0.9, 0.99, 0.999 -> 0.9999), linear otherwise. A next
value outside the axis's domain means the edge is a natural bound (momentum 0, weight decay 0):
then the bound itself is suggested if it was not searched, else nothing is flagged. A linear axis
searched only at values >= 0 is taken to be bounded by 0 (a mixing weight of 0.25 is next tried at
0, not at -0.25).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import SupportsFloat, TypeGuard

from harness.core.catalogue import AXIS_SCALES
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


def _next_value(scale: AxisScale, edge: float, neighbour: float) -> float | None:
    try:
        u_edge, u_nb = scale.forward(edge), scale.forward(neighbour)
        nxt = scale.inverse(2 * u_edge - u_nb)
    except (ValueError, OverflowError):  # log(0): the edge is a bound of the domain
        return None
    if not scale.low <= nxt < scale.high or nxt in (edge, neighbour):
        return None
    return nxt


def edge_note(axis: str, searched: Sequence[object], best: object) -> str:
    """A note when ``best`` is the smallest or largest of ``searched`` numeric values.

    Args:
        axis: the column name.
        searched: the distinct values tried in the cell (NULLs excluded).
        best: the best configuration's value.

    Returns:
        ``""`` when not on an edge (or the axis is not numeric or was not searched), else e.g.
        ``"lr=0.001 is the largest tried: add 0.00333"``.
    """
    nums = sorted({float(v) for v in searched if _is_number(v)})
    if len(nums) < 2 or not _is_number(best):
        return ""
    b = float(best)
    if b not in (nums[0], nums[-1]):
        return ""
    scale = SPACINGS[AXIS_SCALES.get(axis, Scale.LINEAR)]
    if scale is _LINEAR and nums[0] >= 0:
        scale = _NON_NEGATIVE
    side, neighbour = ("smallest", nums[1]) if b == nums[0] else ("largest", nums[-2])
    nxt = _next_value(scale, b, neighbour)
    if nxt is None and side == "smallest" and scale.low > -math.inf and b > scale.low:
        nxt = scale.low
    if nxt is None:
        return ""
    return f"{axis}={_plain(b)} is the {side} tried: add {_fmt(nxt, b, scale)}"


def _plain(x: float) -> str:
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else repr(x)


def _fmt(x: float, edge: float, scale: AxisScale) -> str:
    """``x`` with 3 significant digits, or more when needed to tell it from ``edge``."""
    for digits in range(3, 13):
        s = f"{x:.{digits}g}"
        if float(s) != edge and scale.low <= float(s) < scale.high:
            return _plain(float(s))
    return repr(x)


def _is_number(v: object) -> TypeGuard[SupportsFloat]:
    if isinstance(v, bool) or v is None:
        return False
    try:
        return math.isfinite(float(v))  # type: ignore[arg-type]  # any value: float() says
    except (TypeError, ValueError):
        return False
