"""The metric vs any column, per arm: mean over seeds and a 2-sigma band.

``harness figures GRID --figure metric_vs --x gamma`` draws the metric against ``gamma`` (any
config column: an optimizer's own hyperparameter, ``warmup_steps``, ``weight_decay``...); without
``--x``, against the first own hyperparameter of an optimizer that varies, else the first tuned
hyperparameter that varies. At each x the point is the best configuration over the other
hyperparameters. Diverged points are marked with an ``x`` at the top of the panel, so the edge of
stability is visible. An arm without the column (AdamW has no ``gamma``) is a dashed horizontal
line at its tuned value. A numeric column spanning more than a decade gets a log axis; a
non-numeric one (``nesterov``, ``schedule``) is drawn at evenly spaced positions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from harness.analysis.present.figures.common import (
    FigureData,
    FigureSkipped,
    layout,
    legend,
    metric_label,
    panel_title,
    panels,
    subtitle,
    use_log,
)
from harness.analysis.rows.axes import hyperparameters, own_hyperparameters, varying
from harness.analysis.stats import METHOD
from harness.core.errors import UserError

#: Column holding each point's x position (the value, or its rank when not numeric).
POS = "_x"


def draw(data: FigureData) -> Figure:
    """The figure along ``--x`` (see the module docstring)."""
    return draw_along(data, axis_column(data))


def axis_column(data: FigureData) -> str:
    """``--x``, else the first own hyperparameter that varies, else the first tuned one.

    Raises:
        UserError: ``--x`` names no column of the rows.
        FigureSkipped: no ``--x`` and no hyperparameter varies.
    """
    rows, x = data.rows, data.options.x
    if x is not None:
        if x not in rows.columns:
            raise UserError(f"--x {x!r}: no such column; varying: {', '.join(_varying(rows))}")
        return x
    own = varying(rows, own_hyperparameters(rows))
    found = own or _varying(rows)
    if not found:
        raise FigureSkipped("no hyperparameter varies; name a column with --x")
    return found[0]


def _varying(rows: pd.DataFrame) -> list[str]:
    return varying(rows, hyperparameters(rows))


def draw_along(
    data: FigureData, x: str, xlabel: str | None = None, log_x: bool | None = None
) -> Figure:
    """The metric vs ``x``, one line per arm, one panel per condition (``log_x`` None: a log
    axis when the values span more than a decade)."""
    rows = data.rows
    if rows[x].nunique() < 2:
        raise FigureSkipped(f"only one value of {x}")
    keys = data.panels(rows, [x])
    points = data.tuned(rows, [*keys, METHOD, x])
    table = points.table
    numeric = pd.api.types.is_numeric_dtype(rows[x]) and not pd.api.types.is_bool_dtype(rows[x])
    order = sorted(table[x].dropna().unique(), key=lambda v: (str(type(v)), v))
    table = table.assign(**{POS: table[x] if numeric else table[x].map(order.index)})
    cells = panels(table, keys)
    fig, axes = layout(len(cells))
    for ax, (key, part) in zip(axes, cells, strict=True):
        _panel(ax, part, data)
        ax.set_title(panel_title(key))
        ax.set_ylabel(metric_label(data.metric))
        ax.set_xlabel(xlabel or x)
        xs = part[POS].dropna().to_numpy(float)
        if numeric and (use_log(xs) if log_x is None else log_x) and (xs > 0).all():
            ax.set_xscale("log")
        if not numeric:
            ax.set_xticks(range(len(order)), [str(v) for v in order])
    legend(fig, axes)
    subtitle(fig, data, points, what=f"{metric_label(data.metric)} vs {x}")
    return fig


def _panel(ax: Axes, part: pd.DataFrame, data: FigureData) -> None:
    finite = part["mean"].to_numpy(float)
    for method, line in part.groupby(METHOD, sort=True):
        st = data.style(str(method))
        if line[POS].isna().all():  # the arm has no such column: its tuned value as a reference
            ref = line["mean"].to_numpy(float)
            if np.isfinite(ref).any():
                ax.axhline(np.nanmin(ref), color=st.color, linestyle="--", label=str(method))
            continue
        line = line.dropna(subset=[POS]).sort_values(POS)
        ok = np.isfinite(line["mean"].to_numpy(float))
        xs, m, band = line[POS][ok], line["mean"][ok], line["two_sigma"][ok].fillna(0.0)
        ax.plot(xs, m, label=str(method), **st.line())
        ax.fill_between(xs, m - band, m + band, color=st.color, alpha=0.18, linewidth=0)
        div = line[POS][~ok]
        if len(div):
            ax.plot(
                div,
                np.full(len(div), 0.97),
                "x",
                color=st.color,
                markersize=6,
                mew=1.5,
                transform=ax.get_xaxis_transform(),
                clip_on=False,
                label="_div",
            )
    if use_log(finite):
        ax.set_yscale("log")
    if (~np.isfinite(finite)).any():
        ax.text(
            0.02, 0.97, "x: diverged", transform=ax.transAxes, fontsize=6, va="top", color="0.3"
        )
