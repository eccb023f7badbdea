"""``harness cancel``: stop a grid's SLURM jobs."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli.options import resolve_results, results_option
from harness.grid.load import grid_name


@click.command()
@click.argument("grid")
@click.option(
    "--wait-s",
    default=60.0,
    show_default=True,
    help="Seconds to wait for running jobs to end before recording the rest.",
)
@results_option
def cancel(grid: str, wait_s: float, results: Path | None) -> None:
    """scancel GRID's queued and running SLURM jobs; their runs get status 'cancelled'.

    GRID is a grid YAML file or the name of a grid in the results. Checkpoints are kept:
    'harness submit GRID --retry cancelled' resumes the runs.

    Example: harness cancel grids/adam_betas.yaml
    """
    from harness.launch.slurm.cancel import cancel_grid

    report = cancel_grid(resolve_results(results), grid_name(grid), wait_s=wait_s)
    if not report.jobs:
        click.echo(f"{report.grid}: nothing queued or running")
        return
    jobs = ", ".join(report.jobs)
    line = f"{report.grid}: cancelled jobs {jobs}; {report.cancelled} runs cancelled"
    if report.still_ending:
        line += f"; {report.still_ending} still ending ('harness status' records them)"
    click.echo(line)
