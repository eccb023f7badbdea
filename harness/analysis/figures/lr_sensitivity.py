"""Metric vs learning rate per method: mean over seeds and a 2-sigma band.

At each learning rate the point is the best configuration over the other hyperparameters
(betas, momentum, ...). Diverged learning rates are marked with an ``x`` at the top of the panel
instead of being left out, so the edge of stability is visible.
"""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from harness.analysis.figures.common import (
    METHOD,
    FigureData,
    FigureSkipped,
    layout,
    legend,
    method_style,
    metric_label,
    panel_keys,
    panel_title,
    panels,
    subtitle,
    tuned_points,
    use_log,
)


def draw(data: FigureData) -> Figure:
    """The learning-rate sensitivity figure (see the module docstring)."""
    rows = data.rows
    if rows["lr"].nunique() < 2:
        raise FigureSkipped("only one learning rate")
    keys = panel_keys(rows, ["lr"])
    points = tuned_points(rows, [*keys, METHOD, "lr"], data.goal, data.select_goal)
    cells = panels(points.table, keys)
    fig, axes = layout(len(cells))
    for ax, (key, part) in zip(axes, cells, strict=True):
        _panel(ax, part, rows)
        ax.set_title(panel_title(key))
        ax.set_ylabel(metric_label(data.metric))
    legend(fig, axes)
    subtitle(fig, points.over)
    return fig


def _panel(ax: Axes, part, rows) -> None:
    finite = part["mean"].to_numpy(float)
    for method, line in part.groupby(METHOD, sort=True):
        line = line.sort_values("lr")
        st = method_style(rows, method)
        ok = np.isfinite(line["mean"].to_numpy(float))
        x, m, band = line["lr"][ok], line["mean"][ok], line["two_sigma"][ok].fillna(0.0)
        ax.plot(x, m, marker="o", label=method, **st)
        ax.fill_between(x, m - band, m + band, color=st["color"], alpha=0.18, linewidth=0)
        div = line["lr"][~ok]
        if len(div):
            ax.plot(
                div,
                np.full(len(div), 0.97),
                "x",
                color=st["color"],
                markersize=6,
                mew=1.5,
                transform=ax.get_xaxis_transform(),
                clip_on=False,
                label="_div",
            )
    ax.set_xscale("log")
    if use_log(finite):
        ax.set_yscale("log")
    ax.set_xlabel("peak learning rate")
    if (~np.isfinite(finite)).any():
        ax.text(
            0.02, 0.97, "x: diverged", transform=ax.transAxes, fontsize=6, va="top", color="0.3"
        )
