"""``harness compact``: consolidate a grid's per-run result files (:func:`harness.api.compact`)."""

from __future__ import annotations

from pathlib import Path

import click

from harness import api
from harness.cli.options import results_option


@click.command()
@click.argument("grid")
@results_option
def compact(grid: str, results: Path | None) -> None:
    """Merge GRID's per-run rows and curves (a grid name or its YAML) into consolidated Parquet
    files under <results>/<grid>/compact/, keeping every row; queries see them as before.

    Example: harness compact grids/adam_betas.yaml
    """
    report = api.compact(grid, results=results)  # waits for another compaction
    if report.generation is None:
        click.echo(f"{report.grid}: nothing to compact")
        return
    click.echo(
        f"{report.grid}: generation {report.generation}: {report.rows} result rows and "
        f"{report.curve_points} curve points from {report.consolidated_files} per-run files; "
        f"removed {report.removed_files} files"
    )
