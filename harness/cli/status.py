"""``harness status`` (:func:`harness.api.status`)."""

from __future__ import annotations

from pathlib import Path

import click

from harness import api
from harness.cli.options import results_option


@click.command()
@click.argument("grid")
@results_option
def status(grid: str, results: Path | None) -> None:
    """Counts of GRID's runs by state (completed, diverged, failed, ..., missing).

    GRID is a grid YAML file or the name of a grid in the results. A grid submitted to a backend
    that queues runs (SLURM) also shows its runs by job state (squeue, sacct).

    Example: harness status grids/adam_betas.yaml
    """
    click.echo(api.status(grid, results=results).text())
