"""``harness clean``: tidy a grid's folder (:func:`harness.api.clean`)."""

from __future__ import annotations

from pathlib import Path

import click

from harness import api
from harness.cli.options import results_option


@click.command()
@click.argument("grid")
@results_option
def clean(grid: str, results: Path | None) -> None:
    """Tidy GRID's folder (a grid name or its YAML): remove the lock files no process holds, the
    logs of runs that have a result (those of failed runs stay), and the per-run files that
    compactions consolidated (once readers had their grace). Results are never removed.

    Example: harness clean grids/adam_betas.yaml
    """
    done = api.clean(grid, results=results)
    click.echo(
        f"{done.grid}: removed {done.locks} lock files, {done.logs} logs of runs with a "
        f"result, {done.covered} consolidated files"
    )
