"""``harness cancel``: stop a grid's queued and running jobs, on every backend that queues."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli.options import resolve_results, results_option
from harness.core.errors import UserError
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
    """Stop GRID's queued and running jobs (SLURM: scancel); their runs get status 'cancelled'.

    GRID is a grid YAML file or the name of a grid in the results. Checkpoints are kept:
    'harness submit GRID --retry cancelled' resumes the runs.

    Example: harness cancel grids/adam_betas.yaml
    """
    from harness.launch.contract import queues

    root, name = resolve_results(results), grid_name(grid)
    found = queues()
    reports = [r for q in found.values() if (r := q.cancel(root, name, wait_s)) is not None]
    if not reports:
        kinds = ", ".join(found)
        raise UserError(
            f"grid {name!r} has no queued submissions under {root} (backends "
            f"asked: {kinds}); nothing to cancel"
        )
    for report in reports:
        if not report.jobs:
            click.echo(f"{report.grid}: nothing queued or running")
            continue
        jobs = ", ".join(report.jobs)
        line = f"{report.grid}: cancelled jobs {jobs}; {report.cancelled} runs cancelled"
        if report.still_ending:
            line += f"; {report.still_ending} still ending ('harness status' records them)"
        click.echo(line)
