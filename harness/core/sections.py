"""A section of a user's YAML file declared as a frozen dataclass, as the run config is.

Each key of the section is a field declared once, with :func:`key`: its type, its default (none:
the file must give it), how its YAML value is checked and converted, and its documentation
under it. :func:`read` derives the rest: the valid keys an unknown key's error lists, the
required ones, and one error path for every problem, a :class:`~harness.core.errors.UserError`
of one line naming the file, the section, the key, the value and what was expected (the CLI
prints it and exits with code 2). Values that do not fit together are refused by the section's
``__post_init__`` with a ``ValueError`` (its message becomes the line, after the section's
place), as a launcher profile's section does (:mod:`harness.launch.profile`).

Example::

    @dataclass(frozen=True, kw_only=True, slots=True)
    class Budget:
        lr_points: int = key(check=functools.partial(integer, low=3))
        \"\"\"Learning rates per setting.\"\"\"

    read(Budget, {"lr_points": 4}, "p.yaml: budget")  # Budget(lr_points=4)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import MISSING, dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from harness.core.errors import UserError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")

Check = Callable[[Any, str], Any]
"""``check(value, where)``: a YAML value as the field holds it, or a UserError naming ``where``
(the file, the section and the key)."""


@dataclass(frozen=True, slots=True)
class _Key:
    check: Check | None


_META = "harness_section_key"
"""Key of a dataclass field's metadata holding its :class:`_Key`."""


def key(default: Any = MISSING, *, check: Check | None = None) -> Any:
    """Declare a key of a file section (use as the dataclass field's default).

    Args:
        default: The value when the file gives none, or gives null (a commented-out value);
            MISSING: the file must give it.
        check: Converts and checks the YAML value (:data:`Check`); None: taken as it is.
    """
    return dataclasses.field(default=default, metadata={_META: _Key(check)})


def keys(cls: type[Any], given: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The keys a file's section ``cls`` may hold, in declaration order: its fields but those
    set by the code (``given``, and ``init=False`` ones)."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.init and f.name not in given)


def read(cls: type[T], value: Any, where: str, **given: Any) -> T:
    """The section ``cls`` (a dataclass of :func:`key` fields) from the YAML mapping ``value``;
    ``where``: the file and the section, for errors; ``given``: fields that are not keys of the
    file (a label that is the mapping's key, the file's path).

    Raises:
        UserError: not a mapping, a key that is no field (naming the valid keys), a required key
            missing (naming the required ones), a value its check refuses, values that do not
            fit together.
    """
    found = mapping(value, where)
    valid = keys(cls, tuple(given))
    for k in found:
        if k not in valid:
            raise UserError(f"{where}: unknown key {k!r}; valid keys: {', '.join(valid)}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    required = [k for k in valid if fields[k].default is MISSING]
    for k in required:
        if k not in found:
            raise UserError(f"{where}: missing key {k!r} (required: {', '.join(required)})")
    values = dict(given)
    for k in valid:
        if found.get(k) is None and k not in required:
            continue  # its default
        spec: _Key | None = fields[k].metadata.get(_META)
        check = spec.check if spec is not None else None
        values[k] = found[k] if check is None else check(found[k], f"{where}: {k}")
    try:
        return cls(**values)
    except ValueError as e:
        raise UserError(f"{where}: {e}") from None


def section(cls: type[T]) -> Callable[[Any, str], T]:
    """The :data:`Check` of a key that is a section of its own (``cls``, read by :func:`read`)."""

    def check(value: Any, where: str) -> T:
        return read(cls, value, where)

    return check


# --- checks of plain values ------------------------------------------------------------------


def mapping(value: Any, where: str) -> dict[str, Any]:
    """A mapping, its keys as strings."""
    if not isinstance(value, dict):
        raise UserError(f"{where}: expected a mapping, got {value!r}")
    return {str(k): v for k, v in value.items()}


def text(value: Any, where: str) -> str:
    """A non-empty string."""
    if not isinstance(value, str) or not value:
        raise UserError(f"{where}: expected a non-empty string, got {value!r}")
    return value


def string(value: Any, where: str) -> str:
    """A string (empty allowed)."""
    if not isinstance(value, str):
        raise UserError(f"{where}: expected a string, got {value!r}")
    return value


def number(value: Any, where: str, *, low: float = -math.inf, above: bool = False) -> float:
    """A finite number >= low (> low when ``above``)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UserError(f"{where}: expected a number, got {value!r}")
    if value < low or (above and value == low):
        raise UserError(f"{where}: {value!r} must be {'>' if above else '>='} {low:g}")
    return float(value)


def integer(value: Any, where: str, *, low: int) -> int:
    """An integer >= low."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise UserError(f"{where}: expected an integer >= {low}, got {value!r}")
    return value
