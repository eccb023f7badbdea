"""``harness figures``: regenerate a grid's figures (PNG, PDF and a sidecar JSON each)."""

from __future__ import annotations

import sys
from typing import Any

import click
import pandas as pd

from harness.analysis.present.figures import FIGURES
from harness.analysis.present.figures.options import CURVE_RUNS
from harness.analysis.present.table import FORMATS, render
from harness.analysis.questions.answer import Answer
from harness.cli.options import (
    arm_options,
    choice_option,
    figure_option,
    format_option,
    metric_options,
    rows_options,
    target_options,
)

NOTHING_DRAWN = 1
"""Exit status of ``figures`` when every figure was skipped (none written)."""


@click.command()
@click.argument("grid", nargs=-1)
@figure_option(FIGURES)
@rows_options
@metric_options
@target_options
@choice_option(
    "--runs",
    CURVE_RUNS,
    "best",
    "loss_curves: each arm's tuned configuration (best), or every run of the cell (all, "
    "spikes included).",
)
@click.option(
    "--x",
    "x",
    default=None,
    help="metric_vs: the column along the x axis, e.g. an optimizer's own hyperparameter "
    "(default: the first own hyperparameter that varies, else the first tuned one).",
)
@arm_options
@format_option(FORMATS, "table for people; csv or json for programs (notes on stderr).")
def figures(grid: tuple[str, ...], fmt: str, **given: Any) -> None:
    """Regenerate every figure of GRID... into results/<grid>/figures/.

    GRID... is one or more grid YAMLs or names (several: arms compared across grids, figures in
    results/<a>+<b>/figures/), none: every grid in the results. The figures are those the grid
    YAMLs declare (figures:), else defaults from the columns that vary in the results. Each
    comes as PNG (150 dpi) and PDF (vector) with a sidecar JSON (SQL, hash of the rows, code
    commit, time).

    Every arm keeps one color and marker in all the figures of the grid; a title says what the
    figure is about (lr, model, budget, steps, seeds, scale) and names arms without a result.
    A figure of more than 12 panels is skipped before it computes anything (restrict the rows
    with --where). Exit status 1 when every figure was skipped (the table says why), 0 when
    one was written.

    Example: harness figures grids/adam_betas.yaml --figure loss_curves --runs all
    """
    from harness import api

    done = api.figures(grid, **given)  # every option by the keyword api.figures names it
    table = pd.DataFrame(
        [
            {
                "figure": r.name,
                "written": " ".join(p.name for p in r.files) or "-",
                "skipped": r.skipped,
            }
            for r in done.rendered
        ]
    )
    text, notes = render(Answer(table=table, notes=list(done.notes)), fmt)
    click.echo(text)
    for n in notes:
        click.echo(n, err=fmt != "table")
    if done.rendered and not any(r.files for r in done.rendered):
        sys.exit(NOTHING_DRAWN)  # every figure skipped: the table says why
