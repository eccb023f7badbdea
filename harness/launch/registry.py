"""Launcher backends by profile ``kind`` (imported when used: a dry run imports neither torch
nor DuckDB, and the SLURM backend needs nothing locally)."""

from __future__ import annotations

from harness.core.registry import Registry

LAUNCHERS: Registry[str] = Registry(
    "launcher kind",
    {
        "local": "harness.launch.local.launcher:LocalLauncher",
        "slurm": "harness.launch.slurm.launcher:SlurmLauncher",
    },
)
"""Profile kind -> ``module:Class`` of the backend (a ``harness.launch.contract.Launcher``)."""
