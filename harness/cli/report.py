"""``harness report``: one self-contained HTML file with a grid's figures, tables and curves."""

from __future__ import annotations

from pathlib import Path

import click

from harness.analysis.present.figures import FIGURES
from harness.analysis.present.figures.options import FigureOptions
from harness.analysis.present.report import ReportRequest, build_report
from harness.analysis.rows.direction import DEFAULT_METRIC, GOAL_HELP, GOALS
from harness.analysis.rows.selectors import Selector
from harness.cli.options import parse_arm, results_option
from harness.core.config import SCALES
from harness.core.files import atomic_write_text


@click.command()
@click.argument("grid", nargs=-1)
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The HTML file to write, e.g. report.html.")  # fmt: skip
@click.option("--figure", "names", multiple=True, type=click.Choice(list(FIGURES)),
              help="Draw only this figure (repeatable; default: the grid's figures).")  # fmt: skip
@click.option("--where", default=None, help="SQL predicate over runs' columns.")
@click.option("--metric", default=DEFAULT_METRIC, show_default=True, help="Column analysed.")
@click.option("--goal", type=click.Choice(GOALS), default="auto", show_default=True,
              help=GOAL_HELP)  # fmt: skip
@click.option("--select-by", default=None,
              help="Metric whose mean over seeds picks each cell's configuration (default: the "
              "grid's loss).")  # fmt: skip
@click.option("--scale", type=click.Choice(SCALES), default=None,
              help="full or local runs (default: the only scale present).")  # fmt: skip
@click.option("--baseline", default=None, callback=parse_arm, metavar="K=V[,K=V]",
              help="The gap table's baseline arm (default: optimizer=sgd).")  # fmt: skip
@click.option("--reference", default=None, callback=parse_arm, metavar="K=V[,K=V]",
              help="The reference arm (default: optimizer=adamw, else adam).")  # fmt: skip
@results_option
def report(
    grid: tuple[str, ...],
    output: Path,
    names: tuple[str, ...],
    where: str | None,
    metric: str,
    goal: str,
    select_by: str | None,
    scale: str | None,
    baseline: Selector | None,
    reference: Selector | None,
    results: Path | None,
) -> None:
    """Write one HTML file to share GRID...'s results: it opens offline, every asset inline.

    It holds the figures, loss curves a reader can toggle per arm, each cell's best configuration
    and the gap closure (baseline to reference) with their intervals and notes, and provenance
    (code commit, versions, SHA-256 of the rows, the SQL of each table).

    Example: harness report grids/optimizer_gap.yaml -o report.html
    """
    req = ReportRequest(
        grids=grid,
        results=str(results) if results else None,
        where=where,
        scale=scale,
        metric=metric,
        goal=goal,
        select_by=select_by,
        figures=names,
        options=FigureOptions(runs="all", baseline=baseline, reference=reference),
    )
    html = build_report(req)
    atomic_write_text(output, html)
    click.echo(f"wrote {output} ({len(html.encode()) / 1e6:.1f} MB)")
