"""Launcher backends by profile ``kind``: each entry names a
:class:`~harness.launch.profile.Backend` (its profile section and its launcher class) by
``module:attribute``, imported when a profile of that kind is read (a dry run imports neither torch
nor DuckDB, and the SLURM backend needs nothing locally).

A new backend is one package (its settings dataclass, its ``Backend`` and its
:class:`~harness.launch.contract.Launcher`) plus one entry here, or, from outside the harness, an
entry point in the group ``harness.launchers`` whose value names its ``Backend``."""

from __future__ import annotations

from importlib import metadata

from harness.core.registry import Registry

ENTRY_POINTS = "harness.launchers"
"""Entry-point group under which installed packages offer launcher backends: each entry point
names a ``Backend`` (``package.module:BACKEND``), under the kind profiles give as ``kind:``."""


def _entry_points() -> dict[str, str]:
    return {ep.name: ep.value for ep in metadata.entry_points(group=ENTRY_POINTS)}


LAUNCHERS: Registry[str] = Registry(
    "launcher kind",
    {
        "local": "harness.launch.local.settings:BACKEND",
        "inprocess": "harness.launch.inprocess.settings:BACKEND",
        "slurm": "harness.launch.slurm.settings:BACKEND",
    },
    discover=_entry_points,
)
"""Profile kind -> ``module:attribute`` of its ``Backend``."""
