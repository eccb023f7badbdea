"""``harness watch``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from harness import api
from harness.cli.options import results_option


@click.command()
@click.argument("grids", nargs=-1, required=True)
@click.option(
    "--every",
    "every_s",
    type=click.FloatRange(min=0.1),
    default=2.0,
    show_default=True,
    help="Seconds between redraws.",
)
@click.option("--once", is_flag=True, help="Draw the view once and exit (scripts, logs).")
@results_option
def watch(grids: tuple[str, ...], every_s: float, once: bool, results: Path | None) -> None:
    """A live view of GRIDS (grid YAML files or names in the results), redrawn until every
    planned run has its row, or Ctrl-C: counts by status, hours used against the dry-run
    estimate, the running runs (step, loss, ETA), the best run so far per arm with edge flags,
    and a sparkline of the leading runs' training losses. It only reads the results folder, so
    it works beside a local submit and on a SLURM cluster's shared file system.

    Example: harness watch grids/adam_betas.yaml
    """
    try:
        api.watch(grids, every_s=every_s, once=once, results=results)
    except KeyboardInterrupt:
        sys.exit(130)
