"""beta1 x beta2 heatmap of the tuned metric (talk, Fig. 2/4): is beta1 = beta2 near-optimal?

One panel per method and condition. Each cell is the best configuration over the other
hyperparameters (e.g. lr) at that (beta1, beta2); annotated with its mean, diverged cells hatched
and marked "div", the best cell outlined, the beta1 = beta2 diagonal drawn (dashed), a log color
scale when values span decades, and the same color scale in every panel. Unrun cells stay blank.

A run that blew up but trained to the end keeps a finite value that may be astronomically large
(a perplexity of 1e48). The color scale has robust limits (:func:`robust_limits`): it spans the
values that are not outliers (within ``FENCE`` median absolute deviations of the median, in log
space when values are positive), so cells from 242 to 978 keep distinct colors beside a 1e48.
Cells beyond the limit are cross-hatched, take the end color, are annotated with their value in
short scientific notation, and the color bar is extended (an arrow) and says so.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import LogNorm, Normalize
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.patches import Rectangle

from harness.analysis.present.figures.common import (
    FigureData,
    FigureSkipped,
    layout,
    metric_label,
    panel_title,
    panels,
    subtitle,
    use_log,
)
from harness.analysis.stats import METHOD
from harness.metrics.catalogue import Goal

BETAS = ["beta1", "beta2"]
#: Values further than FENCE scaled median absolute deviations from the median are outliers.
FENCE = 4.0
#: The outlier fence is never closer to the median than this factor (log space).
MIN_SPREAD = 2.0


def draw(data: FigureData) -> Figure:
    """The heatmap figure (see the module docstring)."""
    rows = data.rows.dropna(subset=BETAS)
    if rows.empty:
        raise FigureSkipped("no runs with both beta1 and beta2")
    keys = [*data.panels(rows, BETAS), METHOD]
    points = data.tuned(rows, [*keys, *BETAS])
    table = points.table
    finite = table["mean"].to_numpy(float)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        raise FigureSkipped("every (beta1, beta2) diverged")
    lo, hi = robust_limits(finite, data.goal)
    norm = (LogNorm if use_log(np.array([lo, hi])) else Normalize)(vmin=lo, vmax=hi)
    cmap = "viridis_r" if data.goal == "min" else "viridis"
    cells = panels(table, keys)
    fig, axes = layout(len(cells))
    image = None
    for ax, (key, part) in zip(axes, cells, strict=True):
        image = _panel(ax, part, norm, (lo, hi), cmap, data.goal)
        ax.set_title(panel_title(key))
    assert image is not None  # one panel at least
    clipped_hi, clipped_lo = (finite > hi).any(), (finite < lo).any()
    extend = {(True, True): "both", (True, False): "max", (False, True): "min"}.get(
        (bool(clipped_hi), bool(clipped_lo)), "neither"
    )
    label = metric_label(data.metric)
    if extend != "neither":
        beyond = {"max": f"> {hi:.4g}", "min": f"< {lo:.4g}"}.get(
            extend, f"outside {lo:.4g}..{hi:.4g}"
        )
        label += f"\nhatched: {beyond}, clipped"
    fig.colorbar(image, ax=axes, label=label, shrink=0.9, extend=extend)
    subtitle(fig, data, points, "cell", what=f"{metric_label(data.metric)} over beta1 x beta2")
    return fig


def robust_limits(values: np.ndarray, goal: Goal) -> tuple[float, float]:
    """The color scale's (low, high): the smallest and largest of ``values`` that are not
    outliers on the bad side (beyond ``FENCE`` scaled MADs of the median, in log space when all
    are positive; at least a factor ``MIN_SPREAD`` away). The good side is never clipped."""
    v = np.asarray(values, float)
    logged = bool((v > 0).all())
    t = np.log10(v) if logged else v
    med = float(np.median(t))
    mad = 1.4826 * float(np.median(np.abs(t - med)))
    spread = max(FENCE * mad, np.log10(MIN_SPREAD) if logged else 0.0)
    if not logged and spread == 0.0:
        spread = FENCE * float(np.std(t))
    keep = t <= med + spread if goal == "min" else t >= med - spread
    inside = v[keep] if keep.any() else v
    if goal == "min":
        return float(v.min()), float(inside.max())
    return float(inside.min()), float(v.max())


def _panel(
    ax: Axes,
    part: pd.DataFrame,
    norm: Normalize,
    limits: tuple[float, float],
    cmap: str,
    goal: Goal,
) -> AxesImage:
    b1 = sorted(part["beta1"].unique())
    b2 = sorted(part["beta2"].unique())
    table = part.pivot_table(index="beta1", columns="beta2", values="mean", aggfunc="first")
    grid = table.reindex(index=b1, columns=b2).to_numpy(float)  # (n_beta1, n_beta2)
    shown = np.ma.masked_invalid(grid)
    image = ax.imshow(shown, cmap=cmap, norm=norm, origin="lower", aspect="auto")
    font = 6 if max(len(b1), len(b2)) <= 7 else 4.5
    for i in range(len(b1)):
        for j in range(len(b2)):
            _annotate(ax, i, j, grid[i, j], image, limits, font)
    _outline_best(ax, grid, goal)
    _diagonal(ax, b1, b2)
    ax.set_xticks(range(len(b2)), [f"{v:g}" for v in b2], rotation=45)
    ax.set_yticks(range(len(b1)), [f"{v:g}" for v in b1])
    ax.set_xlabel("beta2")
    ax.set_ylabel("beta1")
    ax.grid(False)
    return image


def _annotate(
    ax: Axes,
    i: int,
    j: int,
    v: float,
    image: AxesImage,
    limits: tuple[float, float],
    font: float,
) -> None:
    """Write ``v`` in cell (i, j): boxed over a hatch when outside the color scale's
    ``limits`` (low, high), else in the ink that reads on its color."""
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
    lo, hi = limits
    text = f"{v:.4g}" if abs(v) < 1e5 else f"{v:.0e}"
    if v > hi or v < lo:  # clipped: hatched over its (end) color, boxed value
        ax.add_patch(
            Rectangle(
                (j - 0.5, i - 0.5), 1, 1, fill=False, hatch="xxx", edgecolor="0.75", linewidth=0
            )
        )
        box = {"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none"}
        ax.text(j, i, text, ha="center", va="center", fontsize=font, color="black", bbox=box)
        return
    r, g, b, _ = image.cmap(image.norm(np.asarray(v)))
    ink = "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.55 else "white"
    ax.text(j, i, text, ha="center", va="center", fontsize=font, color=ink)


def _outline_best(ax: Axes, grid: np.ndarray, goal: Goal) -> None:
    if not np.isfinite(grid).any():
        return
    masked = np.where(np.isfinite(grid), grid, np.inf if goal == "min" else -np.inf)
    i, j = np.unravel_index(np.argmin(masked) if goal == "min" else np.argmax(masked), grid.shape)
    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=1.8))


def _diagonal(ax: Axes, b1: list[float], b2: list[float]) -> None:
    """The beta1 = beta2 line through the cells where both betas are equal (x: beta2 index,
    y: beta1 index), dashed, each such cell's corner-to-corner."""
    pts = [(b2.index(v), i) for i, v in enumerate(b1) if v in b2]
    if not pts:
        return
    xs: list[float] = [p[0] for p in pts]
    ys: list[float] = [p[1] for p in pts]
    if len(pts) == 1:
        xs, ys = [xs[0] - 0.5, xs[0] + 0.5], [ys[0] - 0.5, ys[0] + 0.5]
    else:
        xs, ys = [xs[0] - 0.5, *xs, xs[-1] + 0.5], [ys[0] - 0.5, *ys, ys[-1] + 0.5]
    ax.plot(xs, ys, linestyle="--", color="white", linewidth=1.0, alpha=0.9, label="_diag")
    ax.plot(xs, ys, linestyle=(3, (3, 3)), color="black", linewidth=1.0, alpha=0.6, label="_diag")
    ax.text(
        xs[-1], ys[-1], " b1=b2", fontsize=5.5, color="0.15", ha="left", va="bottom", clip_on=False
    )
