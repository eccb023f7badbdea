"""Training loss vs tokens for each method's tuned configuration (mean over seeds, 2-sigma band).

The configuration shown is each method's best by the final metric in the panel's condition (as
``harness analyze best``); intermediate validation losses, when logged, are drawn as points.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from harness.analysis.figures.common import (
    METHOD,
    FigureData,
    FigureSkipped,
    layout,
    legend,
    method_style,
    panel_keys,
    panel_title,
    panels,
    restrict,
    subtitle,
    tuned_points,
)


def draw(data: FigureData) -> Figure:
    """The loss-curve figure (see the module docstring)."""
    curves = data.frames.get("curves")
    if curves is None or curves.empty:
        raise FigureSkipped("no loss curves")
    rows = data.rows
    keys = panel_keys(rows)
    points = tuned_points(rows, [*keys, METHOD], data.goal, data.select_goal)
    cells = panels(points.table, keys)
    fig, axes = layout(len(cells))
    for ax, (key, _) in zip(axes, cells, strict=True):
        runs = restrict(points.seeds, key)[["run_id", METHOD]]
        _panel(ax, curves.merge(runs, on="run_id"), rows)
        ax.set_title(panel_title(key))
    legend(fig, axes)
    subtitle(fig, points.over, "line")
    return fig


def _panel(ax: Axes, pts: pd.DataFrame, rows: pd.DataFrame) -> None:
    tops = []
    for method, part in pts.groupby(METHOD, sort=True):
        st = method_style(rows, method)
        g = part.groupby("tokens")["train_loss"]
        mean, band = g.mean(), 2 * g.std(ddof=1).fillna(0.0)
        ax.plot(mean.index, mean, label=method, **st)
        ax.fill_between(mean.index, mean - band, mean + band, color=st["color"], alpha=0.18, lw=0)
        val = part.dropna(subset=["val_loss"]).groupby("tokens")["val_loss"].mean()
        if len(val):
            ax.plot(val.index, val, "o", color=st["color"], markersize=3, label="_val")
        late = mean[mean.index >= 0.1 * mean.index.max()]
        tops.append(late.max() if len(late) else mean.max())
    finite = [t for t in tops if np.isfinite(t)]
    if finite:
        low = pts["train_loss"].replace([np.inf, -np.inf], np.nan).min()
        ax.set_ylim(low - 0.05 * (max(finite) - low), max(finite) * 1.02)
    ax.set_xlabel("training tokens")
    ax.set_ylabel("training loss")
