"""``harness figures``: regenerate a grid's figures (PNG, PDF and a sidecar JSON each)."""

from __future__ import annotations

from pathlib import Path

import click
import pandas as pd

from harness.analysis.present.figures import FIGURES
from harness.analysis.present.figures.choose import plan_figures
from harness.analysis.present.figures.options import CURVE_RUNS, FigureOptions
from harness.analysis.present.figures.render import render_figures
from harness.analysis.present.table import FORMATS, render
from harness.analysis.questions.answer import Answer
from harness.analysis.questions.target_query import TargetQuery, find_target
from harness.analysis.rows.direction import (
    DEFAULT_METRIC,
    GOAL_HELP,
    GOALS,
    default_select,
    metric_goal,
)
from harness.analysis.rows.load import select
from harness.analysis.rows.preparation import resolve_metric
from harness.analysis.rows.selectors import Selector
from harness.cli.options import (
    parse_arm,
    results_option,
    scale_option,
    target_options,
    where_option,
)
from harness.core import paths


@click.command()
@click.argument("grid", nargs=-1)
@click.option(
    "--figure",
    "names",
    multiple=True,
    type=click.Choice(list(FIGURES)),
    help="Draw only this figure (repeatable; default: the grid's figures).",
)
@where_option
@click.option("--metric", default=DEFAULT_METRIC, show_default=True, help="Column to plot.")
@click.option(
    "--select-by",
    default=None,
    help="Metric whose mean over seeds picks each point's configuration (default: the grid's "
    "loss: val_loss, or val_ppl when that is the metric).",
)
@click.option(
    "--goal",
    type=click.Choice(GOALS),
    default="auto",
    show_default=True,
    help=GOAL_HELP,
)
@scale_option
@target_options
@click.option(
    "--runs",
    "curve_runs",
    type=click.Choice(CURVE_RUNS),
    default="best",
    show_default=True,
    help="loss_curves: each arm's tuned configuration (best), or every run of the cell (all, "
    "spikes included).",
)
@click.option(
    "--x",
    "x",
    default=None,
    help="metric_vs: the column along the x axis, e.g. an optimizer's own hyperparameter "
    "(default: the first own hyperparameter that varies, else the first tuned one).",
)
@click.option(
    "--baseline",
    default=None,
    callback=parse_arm,
    metavar="K=V[,K=V]",
    help="gap_closure, batch_size: the baseline arm's rows (default: optimizer=sgd).",
)
@click.option("--reference", default=None, callback=parse_arm, metavar="K=V[,K=V]",
              help="gap_closure, batch_size: the reference arm's rows (default: optimizer=adamw, "
              "else adam).")  # fmt: skip
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
              help="table for people; csv or json for programs (notes on stderr).")  # fmt: skip
@results_option
def figures(
    grid: tuple[str, ...],
    names: tuple[str, ...],
    where: str | None,
    metric: str,
    select_by: str | None,
    goal: str,
    scale: str | None,
    curve_runs: str,
    x: str | None,
    baseline: Selector | None,
    reference: Selector | None,
    target: float | None,
    curve: str | None,
    fmt: str,
    results: Path | None,
) -> None:
    """Regenerate every figure of GRID... into results/<grid>/figures/.

    GRID... is one or more grid YAMLs or names (several: arms compared across grids, figures in
    results/<a>+<b>/figures/), none: every grid in the results. The figures are those the grid
    YAMLs declare (figures:), else defaults from the columns that vary in the results. Each
    comes as PNG and PDF with a sidecar JSON (SQL, hash of the rows, code commit, time).

    Every arm keeps one color and marker in all the figures of the grid; a title says what the
    figure is about (lr, model, budget, steps, seeds, scale) and names arms without a result.

    Example: harness figures grids/adam_betas.yaml --figure loss_curves --runs all
    """
    sel = select(list(grid), results=results, scale=scale, where=where)
    metric, said = resolve_metric(sel.frame("runs"), metric)
    goal = metric_goal(metric, goal)
    chosen_by = select_by or default_select(metric)
    select_goal = goal if chosen_by == metric else metric_goal(chosen_by, "auto", "--select-by")
    chosen, why = plan_figures(sel, list(grid), list(names))
    timed = find_target(TargetQuery(list(grid), target, curve), sel.scale)
    options = FigureOptions(
        runs=curve_runs, x=x, baseline=baseline, reference=reference, target=timed
    )
    done = render_figures(sel, chosen, metric, goal, chosen_by, select_goal, options)
    table = pd.DataFrame(
        [
            {
                "figure": r.name,
                "written": " ".join(p.name for p in r.files) or "-",
                "skipped": r.skipped,
            }
            for r in done
        ]
    )
    where = f"files in {paths.figures_dir(sel.root, sel.grid)}"
    text, notes = render(Answer(table=table, notes=[*said, why, where]), fmt)
    click.echo(text)
    for n in notes:
        click.echo(n, err=fmt != "table")
