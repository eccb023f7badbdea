"""beta1 x beta2 heatmap of the tuned metric (talk, Fig. 2/4): is beta1 = beta2 near-optimal?

One panel per method and condition. Each cell is the best configuration over the other
hyperparameters (e.g. lr) at that (beta1, beta2); annotated with its mean, diverged cells hatched
and marked "div", the best cell outlined, a log color scale when values span decades, and the
same color scale in every panel. Unrun cells stay blank. A run that blew up but trained to the end
keeps a finite value that may be astronomically large (a perplexity of 1e48): the color scale
stops at ``CAP`` times the best value (beyond it, the top color), and such values are annotated
in short scientific notation.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import LogNorm, Normalize
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from harness.analysis.figures.common import (
    METHOD,
    FigureData,
    FigureSkipped,
    layout,
    metric_label,
    panel_keys,
    panel_title,
    panels,
    subtitle,
    tuned_points,
    use_log,
)

BETAS = ["beta1", "beta2"]
#: The color scale spans the best value to CAP times it (or its CAP-th part, goal max).
CAP = 1e3


def draw(data: FigureData) -> Figure:
    """The heatmap figure (see the module docstring)."""
    rows = data.rows.dropna(subset=BETAS)
    if rows.empty:
        raise FigureSkipped("no runs with both beta1 and beta2")
    keys = [*panel_keys(rows, BETAS), METHOD]
    points = tuned_points(rows, [*keys, *BETAS], data.goal, data.select_goal)
    table = points.table
    finite = table["mean"].to_numpy(float)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        raise FigureSkipped("every (beta1, beta2) diverged")
    lo, hi = float(finite.min()), float(finite.max())
    if data.goal == "min" and lo > 0:
        hi = min(hi, lo * CAP)
    elif data.goal == "max" and hi > 0:
        lo = max(lo, hi / CAP)
    norm = (LogNorm if use_log(np.array([lo, hi])) else Normalize)(vmin=lo, vmax=hi)
    cmap = "viridis_r" if data.goal == "min" else "viridis"
    cells = panels(table, keys)
    fig, axes = layout(len(cells))
    image = None
    for ax, (key, part) in zip(axes, cells, strict=True):
        image = _panel(ax, part, norm, cmap, data.goal)
        ax.set_title(panel_title(key))
    assert image is not None  # one panel at least
    fig.colorbar(image, ax=axes, label=metric_label(data.metric), shrink=0.9)
    subtitle(fig, points.over, "cell")
    return fig


def _panel(ax: Axes, part: pd.DataFrame, norm, cmap: str, goal: str):
    b1 = sorted(part["beta1"].unique())
    b2 = sorted(part["beta2"].unique())
    grid = part.pivot_table(index="beta1", columns="beta2", values="mean", aggfunc="first")
    grid = grid.reindex(index=b1, columns=b2).to_numpy(float)  # (n_beta1, n_beta2)
    shown = np.ma.masked_invalid(grid)
    image = ax.imshow(shown, cmap=cmap, norm=norm, origin="lower", aspect="auto")
    font = 6 if max(len(b1), len(b2)) <= 7 else 4.5
    for i in range(len(b1)):
        for j in range(len(b2)):
            _annotate(ax, i, j, grid[i, j], image, font)
    _outline_best(ax, grid, goal)
    ax.set_xticks(range(len(b2)), [f"{v:g}" for v in b2], rotation=45)
    ax.set_yticks(range(len(b1)), [f"{v:g}" for v in b1])
    ax.set_xlabel("beta2")
    ax.set_ylabel("beta1")
    ax.grid(False)
    return image


def _annotate(ax: Axes, i: int, j: int, v: float, image, font: float) -> None:
    if np.isnan(v):
        return
    if np.isinf(v):
        ax.add_patch(
            Rectangle(
                (j - 0.5, i - 0.5),
                1,
                1,
                facecolor="0.85",
                hatch="////",
                edgecolor="0.55",
                linewidth=0,
            )
        )
        ax.text(j, i, "div", ha="center", va="center", fontsize=font, color="0.2")
        return
    r, g, b, _ = image.cmap(image.norm(v))
    ink = "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.55 else "white"
    text = f"{v:.4g}" if abs(v) < 1e5 else f"{v:.0e}"
    ax.text(j, i, text, ha="center", va="center", fontsize=font, color=ink)


def _outline_best(ax: Axes, grid: np.ndarray, goal: str) -> None:
    if not np.isfinite(grid).any():
        return
    masked = np.where(np.isfinite(grid), grid, np.inf if goal == "min" else -np.inf)
    i, j = np.unravel_index(np.argmin(masked) if goal == "min" else np.argmax(masked), grid.shape)
    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=1.8))
