"""The library's services below its facade: planning and submitting grids, probing an
optimizer, reading results back. Users import these names from :mod:`harness.api`, which
re-exports every one of them; :mod:`harness.bench` composes them (its phases are submits of
its grid, its verdict reads their rows).

Why a package of its own: ``harness.api`` is the one door for users and the CLI, and holds
``api.bench`` (a whole bench, :mod:`harness.bench`) as it holds ``api.submit``; the bench in
turn submits and reads through these services. With the services inside the facade, the bench
and the facade would import each other. So the layers are ``cli > api > bench > services >
followup | watch > ...`` (``pyproject.toml``, kept by ``lint-imports`` without exceptions): the
facade above the bench, the bench a client of the services, and the CLI of the facade only.

Importing this package is cheap: each function imports what it needs when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.services.args import Grids, data_dir
from harness.services.planning import Compute, Plan, expand, plan, preflight
from harness.services.probing import Probed, probe_optimizer
from harness.services.reading import Rows, cells, report, rows, tuned
from harness.services.submitting import one_progress, submit

if TYPE_CHECKING:
    from harness.followup.selected import Tuned as Tuned  # the type of tuned(), for callers
    from harness.grid.load import Grid as Grid  # what expand() gives, plan() and submit() take

__all__ = [
    "Compute",
    "Grids",
    "Plan",
    "Probed",
    "Rows",
    "cells",
    "data_dir",
    "expand",
    "one_progress",
    "plan",
    "preflight",
    "probe_optimizer",
    "report",
    "rows",
    "submit",
    "tuned",
]
