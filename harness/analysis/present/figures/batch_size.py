"""Tuned metric vs batch size per method, 2-sigma error bars, the SGD-Adam crossover marked.

The crossover (:mod:`harness.analysis.stats.crossing`) is that of the reference (AdamW, else Adam)
over the baseline (SGD): a dashed line at the batch size where the reference starts to beat the
baseline, its shaded t-inversion interval, or a note that there is none in the range. Error bars
are the talk's 2-sigma spread over seeds, not an interval.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, NullLocator

from harness.analysis.present.figures.common import (
    BASELINES,
    REFERENCES,
    FigureData,
    chosen_arm,
    layout,
    legend,
    metric_label,
    panel_title,
    panels,
    points_along,
    restrict,
    subtitle,
    use_log,
)
from harness.analysis.stats import ARM, METHOD, crossover
from harness.metrics.catalogue import Goal

X = "batch_size"


def draw(data: FigureData) -> Figure:
    """The batch-size figure (see the module docstring)."""
    rows = data.rows
    keys, points = points_along(data, X, "batch size")
    cells = panels(points.table, keys)
    a = chosen_arm(rows, data.options.baseline, BASELINES, "--baseline")
    b = chosen_arm(rows, data.options.reference, REFERENCES, "--reference")
    fig, axes = layout(len(cells))
    for ax, (key, part) in zip(axes, cells, strict=True):
        _panel(ax, part, data)
        _mark_crossover(ax, restrict(points.seeds, key), data.goal, a, b)
        ax.set_title(panel_title(key))
        ax.set_ylabel(metric_label(data.metric))
    legend(fig, axes)
    subtitle(fig, data, points, what=f"{metric_label(data.metric)} vs batch size")
    return fig


def _panel(ax: Axes, part: pd.DataFrame, data: FigureData) -> None:
    for method, line in part.groupby(METHOD, sort=True):
        line = line.sort_values(X)
        ok = np.isfinite(line["mean"].to_numpy(float))
        st = data.style(str(method))
        ax.errorbar(
            line[X][ok],
            line["mean"][ok],
            yerr=line["two_sigma"][ok].fillna(0.0),
            capsize=2,
            label=method,
            **st.line(),
        )
        if (~ok).any():
            ax.plot(
                line[X][~ok],
                np.full(int((~ok).sum()), 0.97),
                "x",
                color=st.color,
                transform=ax.get_xaxis_transform(),
                clip_on=False,
                mew=1.5,
            )
    xs = sorted(part[X].unique())
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(xs))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([f"{v:g}" for v in xs])
    if use_log(part["mean"].to_numpy(float)):
        ax.set_yscale("log")
    ax.set_xlabel("batch size (sequences)")


def _mark_crossover(
    ax: Axes, seeds: pd.DataFrame, goal: Goal, a: str | None, b: str | None
) -> None:
    if a is None or b is None or not {a, b} <= set(seeds[METHOD]):
        return
    arms = seeds[seeds[METHOD].isin([a, b])].assign(**{ARM: lambda d: d[METHOD]})
    res = crossover(arms, [], X, a, b, goal).iloc[0]
    if np.isnan(res["crossover"]):
        text = f"{b} vs {a}: no crossover ({b} better {res['b_better']})"
        ax.text(
            0.02,
            0.97,
            text,
            transform=ax.transAxes,
            fontsize=6,
            color="0.3",
            va="top",
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8},
        )
        return
    ax.axvline(res["crossover"], color="0.3", linestyle="--", linewidth=1)
    if np.isfinite([res["ci_low"], res["ci_high"]]).all():
        ax.axvspan(res["ci_low"], res["ci_high"], color="0.5", alpha=0.12, linewidth=0)
    ax.text(
        res["crossover"],
        0.97,
        f" {b} better {res['b_better']}\n {res['crossover']:.3g}",
        transform=ax.get_xaxis_transform(),
        fontsize=6,
        color="0.2",
        va="top",
    )
