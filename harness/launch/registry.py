"""The launcher interface: launcher classes by profile kind (imported lazily: the SLURM launcher
needs nothing locally, and a dry run imports neither torch nor DuckDB), and what a launch reports.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from harness.errors import unknown_choice
from harness.launch.profile import LauncherProfile


@dataclass(frozen=True, slots=True)
class LaunchReport:
    """What a launcher did."""

    launched: int
    """Runs handed to the executor."""
    statuses: dict[str, str]
    """run_id -> status of runs that finished while the launcher waited."""


LAUNCHERS: dict[str, str] = {
    "local": "harness.launch.local:LocalLauncher",
    "slurm": "harness.launch.slurm:SlurmLauncher",
}


def launcher_for(profile: LauncherProfile) -> Any:
    """An instance of the launcher class for ``profile.kind``."""
    if profile.kind not in LAUNCHERS:
        raise unknown_choice("launcher kind", profile.kind, LAUNCHERS)
    module, cls = LAUNCHERS[profile.kind].split(":")
    return getattr(importlib.import_module(module), cls)(profile)
