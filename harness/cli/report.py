"""``harness report``: one self-contained HTML file with a grid's figures, tables and curves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from harness.analysis.present.figures import FIGURES
from harness.cli.options import (
    arm_options,
    figure_option,
    metric_options,
    rows_options,
)


@click.command()
@click.argument("grid", nargs=-1)
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The HTML file to write, e.g. report.html.",
)
@figure_option(FIGURES)
@rows_options
@metric_options
@arm_options
def report(grid: tuple[str, ...], output: Path, **given: Any) -> None:
    """Write one HTML file to share GRID...'s results: it opens offline, every asset inline.

    It holds the figures, loss curves a reader can toggle per arm, each cell's best configuration
    and the gap closure (baseline to reference) with their intervals and notes, and provenance
    (code commit, versions, SHA-256 of the rows, the SQL of each table).

    Example: harness report grids/optimizer_gap.yaml -o report.html
    """
    from harness import api

    html = api.report(grid, output=output, **given)  # every option by api.report's keyword
    click.echo(f"wrote {output} ({len(html.encode()) / 1e6:.1f} MB)")
