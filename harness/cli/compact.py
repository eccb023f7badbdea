"""``harness compact``: consolidate a grid's per-run result files."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli.options import resolve_results, results_option
from harness.grid.load import grid_name
from harness.store.compact import compact as compact_grid


@click.command()
@click.argument("grid")
@results_option
def compact(grid: str, results: Path | None) -> None:
    """Merge GRID's per-run rows and curves (a grid name or its YAML) into consolidated Parquet
    files under <results>/<grid>/compact/, keeping every row; queries see them as before.

    Example: harness compact grids/adam_betas.yaml
    """
    name = grid_name(grid)
    report = compact_grid(resolve_results(results), name)  # waits for another compaction
    assert report is not None  # None only without waiting (wait=False)
    if report.generation is None:
        click.echo(f"{name}: nothing to compact")
        return
    click.echo(
        f"{name}: generation {report.generation}: {report.rows} result rows and "
        f"{report.curve_points} curve points from {report.consolidated_files} per-run files; "
        f"removed {report.removed_files} files"
    )
