"""How a run field is declared, and the catalogue of all of them.

Each field of :class:`harness.core.config.RunConfig` (and of its sections) is declared once, with
:func:`spec`, as a dataclass field whose metadata says what the rest of the harness needs to know:
its role, unit, choices, the scale on which it is swept, and how analysis treats it. Every table
that once listed fields by hand (identity fields, optimizer fields, tuned hyperparameters, axis
scales, the Parquet schema, the keys a grid may set) is derived from :func:`catalogue`.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import operator
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import MISSING, dataclass
from enum import StrEnum
from typing import Any

from harness.core.errors import UserError


class Role(StrEnum):
    """What part of an experiment a field describes."""

    IDENTITY = "identity"
    """Names or places the run (``grid``, ``scale``); set by the harness, not part of run_id."""
    LABEL = "label"
    """Display name of an arm; set in a grid, not part of run_id."""
    ARCHITECTURE = "architecture"
    """The model (``harness.model.build`` builds it from these)."""
    DATA = "data"
    """Dataset, sequence length, batch and budget."""
    OPTIMIZER = "optimizer"
    """Optimizer, its hyperparameters, and the learning-rate schedule."""
    EXECUTION = "execution"
    """Seed, logging, divergence rules, precision and devices."""


class Scale(StrEnum):
    """The spacing on which values of a field are swept (``harness analyze`` suggests the next
    value of an axis on this scale)."""

    LINEAR = "linear"
    """Evenly spaced values."""
    LOG = "log"
    """Evenly spaced logarithms (learning rates, epsilons, weight decays)."""
    DECAY = "decay"
    """Evenly spaced log(1 - x) (EMA coefficients: 0.9, 0.99, 0.999)."""


@dataclass(frozen=True, slots=True)
class FieldMeta:
    """Metadata of one run field (see :func:`spec` for each entry)."""

    unit: str
    choices: tuple[str, ...]
    scale: Scale
    tuned: bool
    compared: bool
    per_optimizer: bool
    absent: Any
    role: Role | None
    sparse: bool = False


_KEY = "harness"
"""Key of a dataclass field's metadata holding its :class:`FieldMeta`."""
_EXTRAS_KEY = "harness_extras"
"""Key marking the field that holds an optimizer's own hyperparameters."""
_CACHE_KEY = "harness_cache"
"""Key marking a private field that caches a derived value (not a run field)."""

ALWAYS = MISSING
"""``absent`` of a field that enters run_id whatever its value (every field that existed when
run_ids were first made: their ids must not change)."""


def spec(
    default: Any = MISSING,
    *,
    unit: str = "",
    choices: tuple[str, ...] = (),
    scale: Scale = Scale.LINEAR,
    tuned: bool = False,
    compared: bool = True,
    per_optimizer: bool = False,
    absent: Any = ALWAYS,
    role: Role | None = None,
    sparse: bool = False,
) -> Any:
    """Declare a run field (use as the dataclass field's default).

    Args:
        default: The value when a grid sets none; MISSING: the grid (or resolution) must.
        unit: Unit of the value (``tokens``, ``nats``, ``s``); empty for counts and names.
        choices: The only valid values (a closed set the harness defines).
        scale: How values of the field are spaced when it is swept.
        tuned: Analysis tunes over it (best configuration per cell) when it varies.
        compared: It defines the experiment: analysis refuses to average over values of it.
            False for replicates (seed), identity and execution details (micro-batching).
        per_optimizer: Read only by the optimizers that declare it (``beta1``, ``momentum``);
            resolution fills it with the optimizer's default, or None when the run's optimizers
            do not read it.
        absent: A value that means "not set": such a value is left out of run_id, so that
            adding the field changes no earlier run's id; a tuple lists several such values
            (a per-optimizer field is None for the optimizers that do not read it). ``ALWAYS``
            (the default, for the original fields) hashes every value.
        role: Overrides the role of the section the field is declared in.
        sparse: A dry-run plan (``--format csv|json``) lists the field only when one of its runs
            sets it (a value other than ``absent``): a field added after plans were pinned
            changes no earlier grid's plan, byte for byte. Needs ``absent``.
    """
    if sparse and absent is ALWAYS:
        raise ValueError("a sparse field must declare absent=")
    meta = FieldMeta(
        unit, tuple(choices), scale, tuned, compared, per_optimizer, absent, role, sparse
    )
    return dataclasses.field(default=default, metadata={_KEY: meta})


@dataclass(frozen=True, slots=True)
class FieldInfo:
    """One run field as the catalogue lists it."""

    name: str
    """Column and grid key."""
    section: str
    """Attribute of ``RunConfig`` holding the field's section; ``""`` for top-level fields."""
    role: Role
    """What part of the experiment it describes."""
    type: type
    """Its type without None: ``int``, ``float``, ``bool`` or ``str``."""
    optional: bool
    """Whether None (SQL NULL) is a valid value."""
    default: Any
    """Value when a grid sets none; ``MISSING`` when it must be given or derived."""
    meta: FieldMeta
    """Everything else declared with :func:`spec`."""

    @property
    def hashed(self) -> bool:
        """Whether the field can enter run_id (identity and label fields never do)."""
        return self.role not in (Role.IDENTITY, Role.LABEL)

    @property
    def settable(self) -> bool:
        """Whether a grid may set it (everything but the identity fields)."""
        return self.role is not Role.IDENTITY


def _base_type(annotation: Any) -> tuple[type, bool]:
    args = typing.get_args(annotation)
    if args:
        rest = [a for a in args if a is not type(None)]
        return rest[0], len(rest) < len(args)
    return annotation, False


def _infos(cls: type, section: str, role: Role | None) -> Iterator[FieldInfo]:
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.metadata.get(_EXTRAS_KEY) or f.metadata.get(_CACHE_KEY):
            continue  # an optimizer's own hyperparameters, or a cache: not catalogue fields
        meta = f.metadata.get(_KEY)
        if meta is None:  # a section: its fields follow, with the section's role
            sub = hints[f.name]
            yield from _infos(sub, f.name, sub.ROLE)
            continue
        base, optional = _base_type(hints[f.name])
        field_role = meta.role or role
        assert field_role is not None, f"{cls.__name__}.{f.name} has no role"
        yield FieldInfo(f.name, section, field_role, base, optional, f.default, meta)


def extras(default: Any) -> Any:
    """Declare the field holding an optimizer's own hyperparameters (not catalogue fields)."""
    return dataclasses.field(default=default, metadata={_EXTRAS_KEY: True})


def cache() -> Any:
    """Declare a private field caching a value derived from the others (excluded from the
    catalogue, equality, hashing and ``repr``)."""
    return dataclasses.field(
        default=None,
        init=False,
        repr=False,
        compare=False,
        hash=False,
        metadata={_CACHE_KEY: True},
    )


@functools.cache
def _choices(cls: type) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple(
        (f.name, f.metadata[_KEY].choices)
        for f in dataclasses.fields(cls)
        if f.metadata.get(_KEY) is not None and f.metadata[_KEY].choices
    )


def check_choices(obj: Any) -> None:
    """Raise UserError when a field of the dataclass instance ``obj`` declared with ``choices``
    holds another value (None passes where the field is optional)."""
    cls: type = type(obj)  # (type[Any] is not Hashable to mypy)
    for name, choices in _choices(cls):
        value = getattr(obj, name)
        if value is not None and value not in choices:
            raise UserError(f"{name}: {value!r} is not one of {', '.join(choices)}")


def walk(cls: type) -> tuple[FieldInfo, ...]:
    """Every field of the config class ``cls`` and of its sections, in declaration order."""
    return tuple(_infos(cls, "", None))


# --- columns and content hash of a config instance ----------------------------------------------


@dataclass(frozen=True, slots=True)
class _Plan:
    """How to read a config class's instances as columns (computed once per class)."""

    top: tuple[str, ...]
    sections: tuple[tuple[str, tuple[str, ...], Callable[[Any], tuple[Any, ...]]], ...]
    extras: tuple[str, str] | None  # (section attribute, field) of the own-hyperparameters holder
    hashed: tuple[tuple[str, Any], ...]  # (name, absent) of every field that can enter the hash
    declared: frozenset[str]  # every declared field (the rest of a flat view is extras)


@functools.cache
def _plan(cls: type) -> _Plan:
    infos = walk(cls)
    order = dict.fromkeys(f.section for f in infos)
    names = {s: tuple(f.name for f in infos if f.section == s) for s in order}
    sections = tuple((s, n, operator.attrgetter(*n)) for s, n in names.items() if s)
    extras = None
    for section in order:
        if section:
            sub = typing.get_type_hints(cls)[section]
            for f in dataclasses.fields(sub):
                if f.metadata.get(_EXTRAS_KEY):
                    extras = (section, f.name)
    hashed = tuple((f.name, f.meta.absent) for f in infos if f.hashed)
    return _Plan(names.get("", ()), sections, extras, hashed, frozenset(f.name for f in infos))


def flatten(obj: Any) -> dict[str, Any]:
    """A config instance as columns: every declared field, then the extras (own
    hyperparameters), by name."""
    cls: type = type(obj)  # (type[Any] is not Hashable to mypy)
    plan = _plan(cls)
    out = {name: getattr(obj, name) for name in plan.top}
    for section, names, get in plan.sections:
        out.update(zip(names, get(getattr(obj, section)), strict=True))
    if plan.extras is not None:
        section, name = plan.extras
        for key, value in getattr(getattr(obj, section), name).items:
            if key in out:
                raise UserError(f"hyperparameter {key!r} collides with the run field {key!r}")
            out[key] = value
    return out


def hashed_values(obj: Any) -> dict[str, Any]:
    """What a config's content hash covers: every field that changes what the run computes.

    The original fields always count (a NULL too), so ids made before later fields existed
    stay the same; a later field counts only when it differs from the value meaning "absent";
    extras (own hyperparameters) count when set.
    """
    cls: type = type(obj)  # (type[Any] is not Hashable to mypy)
    plan = _plan(cls)
    cols = flatten(obj)
    out = {
        name: cols.pop(name)
        for name, absent in plan.hashed
        if absent is ALWAYS or not is_absent(cols[name], absent)
    }
    out.update((k, v) for k, v in cols.items() if k not in plan.declared)
    return out


def is_absent(value: Any, absent: Any) -> bool:
    """Whether ``value`` is the (or one of a tuple of) value(s) meaning "not set"."""
    return value in absent if isinstance(absent, tuple) else value == absent


def content_hash(values: Mapping[str, Any]) -> str:
    """Stable 16-hex-digit hash of a mapping (canonical JSON: sorted keys, no spaces)."""
    blob = json.dumps(dict(sorted(values.items())), separators=(",", ":"), default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
