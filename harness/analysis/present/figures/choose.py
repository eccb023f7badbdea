"""Which figures ``harness figures GRID`` draws: asked for, declared by the grid, or defaults."""

from __future__ import annotations

from collections.abc import Sequence

from harness.analysis.present.figures import default_figures
from harness.analysis.rows.axes import experiment_columns, varying, varying_within
from harness.analysis.rows.gridref import declared_figures
from harness.analysis.rows.load import Selection


def plan_figures(
    sel: Selection, grid_args: str | Sequence[str], asked: Sequence[str]
) -> tuple[list[str], str]:
    """(figure names, where they come from).

    ``asked`` (``--figure``) wins; then the ``figures:`` the grid YAMLs declare (in order,
    without repeats); then :func:`~harness.analysis.present.figures.default_figures` of the config
    columns that vary in the results (for one optimizer, plus ``optimizer`` itself).
    """
    if asked:
        return list(dict.fromkeys(asked)), "figures: as asked (--figure)"
    args = [grid_args] if isinstance(grid_args, str) else list(grid_args)
    declared = [f for a in args for f in declared_figures(a) or []]
    if declared:
        return list(dict.fromkeys(declared)), f"figures: declared in {', '.join(args)}"
    rows = sel.frame("runs")
    # an axis is what varies for one optimizer (beta1 is NULL for SGD: not a beta sweep)
    axes = varying(rows, ["optimizer"]) + varying_within(
        rows, ["optimizer"], experiment_columns(rows)
    )
    return default_figures(
        axes
    ), f"figures: defaults for the varying columns {', '.join(axes) or '(none)'}"
