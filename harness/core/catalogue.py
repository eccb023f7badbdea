"""The field catalogue: every table about run fields, derived from their declarations in
:mod:`harness.core.config`, and the flat view of a run (its columns) with its content hash.

Nothing here names a field by hand: adding a field to a section of ``RunConfig`` adds it to the
grid keys, the Parquet schema, the manifest, run_id (when set), and the analysis tables.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Mapping
from typing import Any

from harness.core.config import Hyperparameters, RunConfig
from harness.core.fields import (
    FieldInfo,
    Role,
    Scale,
    flatten,
    walk,
)
from harness.core.fields import content_hash as content_hash  # analysis imports it here
from harness.core.provenance import INPUTS, PROVENANCE, THREADS
from harness.core.result import OUTCOME

CATALOGUE: tuple[FieldInfo, ...] = walk(RunConfig)
"""Every run field, in column order."""

FIELDS: dict[str, FieldInfo] = {f.name: f for f in CATALOGUE}
"""Field name -> its declaration."""

FIELD_NAMES: tuple[str, ...] = tuple(FIELDS)
"""Column names of the config, in order."""

GRID_KEYS: frozenset[str] = frozenset(f.name for f in CATALOGUE if f.settable)
"""Keys a grid may set (everything but the identity fields)."""

PER_OPTIMIZER: tuple[str, ...] = tuple(f.name for f in CATALOGUE if f.meta.per_optimizer)
"""Fields read only by the optimizers that declare them (None for the others)."""

TUNED: tuple[str, ...] = tuple(f.name for f in CATALOGUE if f.meta.tuned)
"""Hyperparameters analysis tunes over when they vary."""

NOT_COMPARED: tuple[str, ...] = tuple(
    f.name for f in CATALOGUE if not f.hashed or not f.meta.compared
)
"""Fields whose values do not define a different experiment (identity, label, replicates,
execution details)."""

AXIS_SCALES: dict[str, Scale] = {f.name: f.meta.scale for f in CATALOGUE}
"""Field -> the scale it is swept on."""


OWN_HYPERPARAMETERS = "own_hyperparameters"
"""Row column naming (comma-separated) the config columns that are the optimizer's own
hyperparameters (declared by the optimizer, not by the harness): analysis tunes over them."""

WORKLOAD_PARAMETERS = "workload_parameters"
"""Row column naming (comma-separated) the config columns that are the parameters of the run's
workload (``harness.workloads``): conditions of the experiment, never tuned over; NULL for the
GPT's runs."""

RESERVED: frozenset[str] = frozenset(
    {"run_id", OWN_HYPERPARAMETERS, WORKLOAD_PARAMETERS, *OUTCOME, *PROVENANCE, *INPUTS, *THREADS}
)
"""Row columns besides the run fields and the metrics: an optimizer's hyperparameter may not
take one of these names (nor a run field's or a metric's). Not the columns an imported CSV may
not set (``harness.store.importing.SET_BY_IMPORTER``)."""


def names_with(role: Role) -> tuple[str, ...]:
    """Names of the fields of one role, in column order."""
    return tuple(f.name for f in CATALOGUE if f.role is role)


def default(name: str) -> Any:
    """The declared default of field ``name``."""
    value = FIELDS[name].default
    assert value is not dataclasses.MISSING, f"field {name} has no default"
    return value


# --- flat view -----------------------------------------------------------------------------------

_SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
    (section, tuple(f.name for f in CATALOGUE if f.section == section))
    for section in dict.fromkeys(f.section for f in CATALOGUE)
)
_TOP = dict(_SECTIONS)[""]
_SECTION_TYPES: dict[str, type] = {
    name: hint for name, hint in typing.get_type_hints(RunConfig).items() if name not in _TOP
}


def flat(run: RunConfig) -> dict[str, Any]:
    """The run as columns: every catalogue field, then the optimizer's own hyperparameters."""
    return flatten(run)


_SECTION_OF = {f.name: f.section for f in CATALOGUE}


def from_flat(columns: Mapping[str, Any], *, clean: bool = True) -> RunConfig:
    """The run of a manifest row (config columns; ``run_id`` is ignored).

    Every column that is not a catalogue field is one of the optimizer's own hyperparameters
    (None: absent). ``clean`` turns NaN (a NULL read through pandas) into None and numpy
    scalars into plain values. Raises UserError when a section's values are invalid.
    """
    by_section: dict[str, dict[str, Any]] = {section: {} for section, _ in _SECTIONS}
    extra: dict[str, Any] = {}
    for name, value in columns.items():
        if clean:
            value = _clean(value)
        section = _SECTION_OF.get(name)
        if section is not None:
            by_section[section][name] = value
        elif name != "run_id":
            extra[name] = value
    sections = {
        section: _SECTION_TYPES[section](**values)
        for section, values in by_section.items()
        if section
    }
    optim = sections["optim"]
    if extra:
        sections["optim"] = dataclasses.replace(optim, hyperparameters=Hyperparameters.of(extra))
    return RunConfig(**by_section[""], **sections)


def with_values(run: RunConfig, **changes: Any) -> RunConfig:
    """``run`` with some fields (by their flat names) changed: ``with_values(run, seed=3)``."""
    return from_flat({**flat(run), **changes})


def _clean(v: Any) -> Any:
    """NaN read back from Parquet/pandas for a NULL becomes None; numpy scalars plain values."""
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "item"):  # numpy scalar
        return v.item()
    return v


def run_id(run: RunConfig) -> str:
    """The run's content hash (``run.run_id``)."""
    return run.run_id
