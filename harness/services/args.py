"""The arguments every service takes as a caller types them: grids, the results root, the data
root (a path, a string or None for the default)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

Grids = str | Path | Sequence[str | Path] | None
"""A grid YAML path or a grid name in the results, several (arms compared across grids), or
None (every grid under the results root)."""


def grid_args(grid: Grids) -> list[str]:
    """``grid`` as a list of grid arguments (empty: every grid)."""
    if grid is None:
        return []
    if isinstance(grid, str | Path):
        return [str(grid)]
    return [str(g) for g in grid]


def results_arg(results: str | Path | None) -> str | None:
    """A results root as the analysis takes it (None: the default)."""
    return str(results) if results is not None else None


def path_arg(value: str | Path | None) -> Path | None:
    """An optional path argument as a Path."""
    return Path(value) if value is not None else None


def data_dir(data: str | Path | None) -> Path:
    """The data root of ``data`` (None: ``$HARNESS_DATA``, then the data home), as every command
    resolves it (:func:`harness.data.catalogue.data_root`).

    Raises:
        UserError: ``data`` is not a folder.
    """
    from harness.data.catalogue import data_root

    return data_root(path_arg(data))
