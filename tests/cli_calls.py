"""`harness` commands called in process on a results folder, as the analysis tests call them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from harness.cli import main


def run(root: Path, *args: str) -> Result:
    """``harness ARGS --results ROOT``, in process."""
    return CliRunner().invoke(main, [*args, "--results", str(root)])


def rows_of(root: Path, *args: str) -> list[dict[str, Any]]:
    """The rows ``harness ARGS --results ROOT --format json`` prints (the command must succeed)."""
    res = run(root, *args, "--format", "json")
    assert res.exit_code == 0, res.output
    rows: list[dict[str, Any]] = json.loads(res.stdout)
    return rows
