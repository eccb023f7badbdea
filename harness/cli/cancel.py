"""``harness cancel``: stop a grid's queued and running jobs, on every backend that queues
(:func:`harness.api.cancel`)."""

from __future__ import annotations

from pathlib import Path

import click

from harness import api
from harness.cli.options import results_option


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
    """Stop GRID's queued and running jobs (SLURM: scancel); their runs get status 'cancelled'.

    GRID is a grid YAML file or the name of a grid in the results. Checkpoints are kept:
    'harness submit GRID --retry cancelled' resumes the runs.

    Example: harness cancel grids/adam_betas.yaml
    """
    for report in api.cancel(grid, wait_s=wait_s, results=results):
        if not report.jobs:
            click.echo(f"{report.grid}: nothing queued or running")
            continue
        jobs = ", ".join(report.jobs)
        line = f"{report.grid}: cancelled jobs {jobs}; {report.cancelled} runs cancelled"
        if report.still_ending:
            line += f"; {report.still_ending} still ending ('harness status' records them)"
        click.echo(line)
