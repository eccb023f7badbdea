"""``harness status``."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli.options import resolve_results, results_option
from harness.grid.load import grid_name
from harness.launch.contract import queues
from harness.store.status import format_status, grid_status


@click.command()
@click.argument("grid")
@results_option
def status(grid: str, results: Path | None) -> None:
    """Counts of GRID's runs by state (completed, diverged, failed, ..., missing).

    GRID is a grid YAML file or the name of a grid in the results. A grid submitted to a backend
    that queues runs (SLURM) also shows its runs by job state (squeue, sacct).

    Example: harness status grids/adam_betas.yaml
    """
    root, name = resolve_results(results), grid_name(grid)
    click.echo(format_status(grid_status(root, name)))
    for queue in queues().values():
        view = queue.view(root, name)
        if view is not None:
            click.echo(view.line())
