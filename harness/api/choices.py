"""The choices of the API's string arguments that a caller checks before calling (the CLI's
``click.Choice`` options). Kept apart from :mod:`harness.api`: importing them loads the grid
grammar and the launch inputs (about a second), which only ``submit`` needs."""

from __future__ import annotations

from harness.grid.preview import PLAN_FORMATS as PLAN_FORMATS
from harness.launch.inputs import STALE_CHOICES as STALE_CHOICES

__all__ = ["PLAN_FORMATS", "STALE_CHOICES"]
