"""Training loss vs tokens per arm, one panel per condition (each arm's own run length is no
condition: arms of different lengths share a panel).

The curve drawn is the training loss, or the validation loss when the curves have no training
loss (imported validation-only histories); along tokens, or steps when the curves have none. With
a target (``--target`` or the grid's ``target:``) the target is drawn as a line and the y axis
zooms to the loss near it, where arms that race to it differ.

``--runs best`` (the default): each arm's tuned configuration (its best by the final metric in
the panel's condition, as ``harness analyze best``), the mean over seeds and a 2-sigma band.
``--runs all``: every run of the cell, each a thin line in its arm's color (spikes and blow-ups
included: the y axis reaches the loss at the start of training, so a spike above it runs off the
top), with the tuned configuration's mean drawn thick on top. Validation losses, when logged,
are drawn as points (the legend says so).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from harness.analysis.present.figures.common import (
    FigureData,
    FigureSkipped,
    layout,
    legend,
    panel_title,
    panels,
    restrict,
    subtitle,
)
from harness.analysis.questions.target_query import own_lengths
from harness.analysis.stats import METHOD


def draw(data: FigureData) -> Figure:
    """The loss-curve figure (see the module docstring)."""
    if not data.has_curves():
        raise FigureSkipped("no loss curves")
    rows = data.rows
    every = data.options.runs == "all"
    keys = data.panels(rows, own_lengths(rows))
    points = data.tuned(rows, [*keys, METHOD])
    cells = panels(points.table, keys)
    drawn = [
        (
            key,
            best := restrict(points.seeds, key)[["run_id", METHOD]],
            restrict(rows, key)[["run_id", METHOD]] if every else best.iloc[:0],
        )
        for key, _ in cells
    ]
    curves = data.curves({r for _, b, o in drawn for r in (*b["run_id"], *o["run_id"])})
    loss = _loss_column(curves)
    x = "tokens" if "tokens" in curves and curves["tokens"].notna().any() else "step"
    curves = curves.assign(train_loss=curves[loss], tokens=curves[x])  # drawn as these
    fig, axes = layout(len(cells))
    has_val = False
    for ax, (key, best, others) in zip(axes, drawn, strict=True):
        has_val |= _panel(
            ax,
            curves.merge(best, on="run_id"),
            curves.merge(others, on="run_id"),
            data,
            validation=loss == "train_loss",
        )
        ax.set_title(panel_title(key))
        ax.set_xlabel("training tokens" if x == "tokens" else "step")
        ax.set_ylabel("training loss" if loss == "train_loss" else "validation loss")
        _target(ax, data, loss)
    if has_val:
        axes[0].add_line(_val_handle())
    legend(fig, axes)
    name = "training loss" if loss == "train_loss" else "validation loss (no training loss)"
    what = (
        f"{name}, every run (thin) and each arm's tuned config"
        if every
        else f"{name} of each arm's tuned config"
    )
    per_arm = points.seeds.groupby(METHOD)["run_id"].nunique() if len(points.seeds) else None
    if per_arm is not None and per_arm.nunique() > 1:
        what += "; seeds per arm: " + ", ".join(f"{m} {n}" for m, n in per_arm.items())
    subtitle(fig, data, points, "thick line" if every else "line", what=what)
    return fig


def _loss_column(curves: pd.DataFrame) -> str:
    """The loss the curves hold: the training loss, else the validation loss."""
    if "train_loss" in curves and curves["train_loss"].notna().any():
        return "train_loss"
    if "val_loss" in curves and curves["val_loss"].notna().any():
        return "val_loss"
    raise FigureSkipped("no training or validation loss in the curves")


def _target(ax: Axes, data: FigureData, loss: str) -> None:
    """The target as a line, the y axis zoomed near it (module docstring)."""
    target = data.options.target
    if target is None or target.column != loss:
        return
    ax.axhline(target.value, color="0.2", linewidth=0.8, linestyle=":", label="_target")
    ax.annotate(
        target.describe(),
        (0.01, target.value),
        xycoords=("axes fraction", "data"),
        fontsize=6,
        va="bottom",
        color="0.2",
    )
    ys = [np.asarray(line.get_ydata(), dtype=float) for line in ax.get_lines()]
    lows = [float(np.nanmin(y)) for y in ys if y.size and np.isfinite(y).any()]
    low = min([*lows, target.value])
    spread = max(target.value - low, 0.01 * abs(target.value), 1e-3)
    top = target.value + 3 * spread
    ax.set_ylim(low - 0.2 * spread, top)
    near = [
        float(np.min(np.asarray(line.get_xdata(), float)[np.asarray(line.get_ydata()) <= top]))
        for line in ax.get_lines()
        if (np.asarray(line.get_ydata(), float) <= top).any()
    ]
    if near:
        right = ax.get_xlim()[1]
        ax.set_xlim(min(near) - 0.05 * (right - min(near)), right)


def _val_handle() -> Line2D:
    """An invisible artist whose legend entry explains the points."""
    return Line2D(
        [],
        [],
        marker="o",
        linestyle="none",
        color="0.3",
        markersize=3,
        label="validation loss (eval points)",
        visible=False,
    )


def _panel(
    ax: Axes, best: pd.DataFrame, every: pd.DataFrame, data: FigureData, validation: bool = True
) -> bool:
    """Draw; True when validation points were drawn (``validation``: the curve drawn is
    another loss, so validation points go on top)."""
    for _, part in every.groupby("run_id", sort=True):
        st = data.style(str(part[METHOD].iloc[0]))
        ax.plot(
            part["tokens"],
            part["train_loss"],
            color=st.color,
            linewidth=0.6,
            alpha=0.45,
            label="_run",
        )
    has_val = False
    tops = []
    for method, part in best.groupby(METHOD, sort=True):
        st = data.style(str(method))
        g = part.groupby("tokens")["train_loss"]
        mean, band = g.mean(), 2 * g.std(ddof=1).fillna(0.0)
        ax.plot(
            mean.index,
            mean,
            label=str(method),
            color=st.color,
            linestyle=st.linestyle,
            marker=st.marker,
            markevery=max(1, len(mean) // 6),
            linewidth=2.0 if len(every) else 1.4,
        )
        ax.fill_between(mean.index, mean - band, mean + band, color=st.color, alpha=0.18, lw=0)
        val = part.dropna(subset=["val_loss"]).groupby("tokens")["val_loss"].mean()
        if len(val) and validation:
            has_val = True
            ax.plot(val.index, val, "o", color=st.color, markersize=3, label="_val")
        late = mean[mean.index >= 0.1 * mean.index.max()]
        tops.append(late.max() if len(late) else mean.max())
    both = pd.concat([best, every])
    losses = both["train_loss"].replace([np.inf, -np.inf], np.nan)
    finite = [t for t in tops if np.isfinite(t)]
    if finite and losses.notna().any():
        low = float(losses.min())
        top = max(finite) * 1.02
        if len(every):  # reach the loss at the start, so spikes show up to the top edge
            first = every.sort_values("step").groupby("run_id")["train_loss"].first()
            first = first.replace([np.inf, -np.inf], np.nan).dropna()
            top = max(top, float(first.median()) * 1.05) if len(first) else top
        ax.set_ylim(low - 0.05 * (top - low), top)
    return has_val
