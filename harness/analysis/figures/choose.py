"""Which figures ``harness figures GRID`` draws: asked for, declared by the grid, or defaults."""

from __future__ import annotations

from collections.abc import Sequence

from harness.analysis.axes import experiment_columns, varying, varying_within
from harness.analysis.figures import default_figures
from harness.analysis.gridref import declared_figures
from harness.analysis.load import Selection


def plan_figures(sel: Selection, grid_arg: str, asked: Sequence[str]) -> tuple[list[str], str]:
    """(figure names, where they come from).

    ``asked`` (``--figure``) wins; then a grid YAML's ``figures:``; then
    :func:`~harness.analysis.figures.default_figures` of the config columns that vary in the results
    (for one optimizer, plus ``optimizer`` itself).
    """
    if asked:
        return list(dict.fromkeys(asked)), "figures: as asked (--figure)"
    declared = declared_figures(grid_arg)
    if declared:
        return declared, f"figures: declared in {grid_arg}"
    rows = sel.frame("runs")
    # an axis is what varies for one optimizer (beta1 is NULL for SGD: not a beta sweep)
    axes = varying(rows, ["optimizer"]) + varying_within(
        rows, ["optimizer"], experiment_columns(rows)
    )
    return default_figures(
        axes
    ), f"figures: defaults for the varying columns {', '.join(axes) or '(none)'}"
