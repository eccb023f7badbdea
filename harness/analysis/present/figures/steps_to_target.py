"""Steps to a target training loss vs batch size per method, log-log, with ideal scaling.

Each line is a method's tuned configuration at each batch size
(:mod:`harness.analysis.stats.critical_batch`): the mean steps at which the training loss first
reaches the target (the highest loss every tuned run reaches), with the t interval over seeds as
error bars. A dotted line of the same color is perfect linear scaling from the smallest batch
(S(B_0) B_0 / B); a vertical tick marks the critical batch size (S(B) = a + b/B fitted over every
batch size, 20 % more steps than linear scaling, Zhang et al. 2024) where there is one.
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
    panel_title,
    panels,
    points_along,
    subtitle,
)
from harness.analysis.stats import METHOD, curves_by_run, default_target, steps_table

X = "batch_size"


def draw(data: FigureData) -> Figure:
    """The steps-to-target figure (see the module docstring)."""
    keys, points = points_along(data, X, "batch size")
    curves = curves_by_run(data.frames["curves"], points.seeds["run_id"])
    if not curves:
        raise FigureSkipped("no loss curves for the tuned runs")
    target = default_target(curves)
    table = steps_table(points.seeds, curves, [*keys, METHOD], X, target)
    cells = panels(table, keys)
    fig, axes = layout(len(cells))
    for ax, (key, part) in zip(axes, cells, strict=True):
        _panel(ax, part, data)
        ax.set_title(panel_title(key) or f"steps to train loss {target:.3g}")
    legend(fig, axes)
    subtitle(fig, data, points, what=f"steps to train loss {target:.3g} vs batch size")
    return fig


def _panel(ax: Axes, part: pd.DataFrame, data: FigureData) -> None:
    for method, line in part.groupby(METHOD, sort=True):
        line = line.sort_values(X)
        st = data.style(str(method))
        b, s = line[X].to_numpy(float), line["steps"].to_numpy(float)
        ok = np.isfinite(s)
        err = np.abs(np.stack([s - line["steps_ci_low"], line["steps_ci_high"] - s]))
        ax.errorbar(
            b[ok], s[ok], yerr=np.nan_to_num(err[:, ok]), capsize=2, label=method, **st.line()
        )
        if ok[0]:
            ax.plot(b, s[0] * b[0] / b, ":", color=st.color, linewidth=1, label="_ideal")
        crit = float(line["critical_batch"].iloc[0])
        if np.isfinite(crit):
            ax.axvline(crit, color=st.color, linestyle="--", linewidth=0.8, alpha=0.7)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("batch size")
    ax.set_ylabel("steps to target")
    ax.text(
        0.02,
        0.03,
        "dotted: linear scaling; dashed: critical batch",
        transform=ax.transAxes,
        fontsize=6,
        color="0.3",
    )
