"""A tracked metric against training tokens (``--metric``, e.g. ``mu_norm`` or ``val_loss_q4``):
one line per method, the mean over seeds with a 2-sigma band, at the evaluation points where the
runs recorded it (``track:`` and ``eval_every``; the last point is the end of the run).

The configuration shown is each method's best in the panel's condition by ``--select-by`` (the
grid's loss by default), as in ``harness analyze best``; panels are the conditions that vary.
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
    restrict,
    subtitle,
)
from harness.analysis.stats import METHOD


def draw(data: FigureData) -> Figure:
    """The metric-vs-tokens figure (see the module docstring)."""
    curves = data.frames.get("curves")
    metric = data.metric
    if curves is None or metric not in curves.columns or curves[metric].isna().all():
        raise FigureSkipped(
            f"no curve has {metric!r}; record it through training with track: [{metric}] "
            "and eval_every"
        )
    rows = data.rows
    keys = data.panels(rows)
    points = data.tuned(rows, [*keys, METHOD])
    cells = panels(points.table, keys)
    fig, axes = layout(len(cells))
    for ax, (key, _) in zip(axes, cells, strict=True):
        runs = restrict(points.seeds, key)[["run_id", METHOD]]
        _panel(ax, curves.merge(runs, on="run_id").dropna(subset=[metric]), data)
        ax.set_title(panel_title(key))
    legend(fig, axes)
    subtitle(fig, data, points, "line", what=f"{metric} through training")
    return fig


def _panel(ax: Axes, pts: pd.DataFrame, data: FigureData) -> None:
    metric = data.metric
    for method, part in pts.groupby(METHOD, sort=True):
        st = data.style(str(method))
        g = part.groupby("tokens")[metric]
        mean, band = g.mean(), 2 * g.std(ddof=1).fillna(0.0)
        ok = np.isfinite(mean.to_numpy(float))
        x, m, b = mean.index[ok], mean[ok], band[ok]
        ax.plot(x, m, markersize=3, label=str(method), **st.line())
        ax.fill_between(x, m - b, m + b, color=st.color, alpha=0.18, lw=0)
    ax.set_xlabel("training tokens")
    ax.set_ylabel(metric_label(metric))
