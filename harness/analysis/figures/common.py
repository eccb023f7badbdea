"""What every figure shares: its input, methods (lines), panels (conditions), tuned points.

Lines are *methods*: the optimizer, plus ``embedding_optimizer`` or ``grad_clip`` when those
vary for it (``sgd (grad_clip=1)``). Panels are the other conditions that vary (model, batch
size, tokens, ...). Everything else that varies is a hyperparameter and is tuned over: each point
of a figure is the best configuration by the mean over seeds, as in ``harness analyze best``.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from harness.analysis.axes import (
    auto_over,
    check_cells,
)
from harness.analysis.cells import iter_cells
from harness.analysis.figures import style
from harness.analysis.methods import (  # noqa: F401 (figures import them from here)
    METHOD,
    METHOD_EXTRAS,
    add_methods,
    panel_keys,
    short,
)
from harness.analysis.tuning import best_runs, tune
from harness.core.targets import Target
from harness.metrics.catalogue import METRICS

#: More panels than this: the figure asks for a narrower --where.
MAX_PANELS = 12


class FigureSkipped(Exception):
    """The data cannot make this figure (one line saying why)."""


@dataclass(frozen=True, slots=True)
class FigureData:
    """A figure's input."""

    rows: pd.DataFrame
    """Prepared run rows (``value`` column, diverged runs worst) with ``method``."""
    metric: str
    """The analysed column."""
    goal: str
    """``min`` or ``max``."""
    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    """Further query results by name (e.g. ``curves``)."""
    select_goal: str | None = None
    """``min`` or ``max`` of ``select_value``, when another metric selects configurations."""
    target: Target | None = None
    """The loss runs are timed to (``--target`` or the grid's ``target:``), when there is one."""


def method_style(rows: pd.DataFrame, method: str) -> dict[str, Any]:
    """Color (by optimizer) and line style (by variant) of a method."""
    opt = str(rows.loc[rows[METHOD] == method, "optimizer"].iloc[0])
    variants = sorted(rows.loc[rows["optimizer"] == opt, METHOD].unique())
    return {"color": style.color(opt), "linestyle": style.DASHES[variants.index(method) % 4]}


def panels(rows: pd.DataFrame, keys: Sequence[str]) -> list[tuple[dict[str, Any], pd.DataFrame]]:
    """The panels' keys and rows; too many panels skip the figure."""
    out = list(iter_cells(rows, keys))
    if len(out) > MAX_PANELS:
        raise FigureSkipped(
            f"{len(out)} panels (one per {', '.join(keys)}); restrict the rows with --where"
        )
    return out


def panel_title(key: dict[str, Any]) -> str:
    """``adamw, batch_size=256``: the method by name, conditions as ``column=value``."""
    parts = [str(v) if k == METHOD else f"{k}={short(v)}" for k, v in key.items()]
    return ", ".join(parts)


def subtitle(fig: Figure, over: Sequence[str], unit: str = "point") -> None:
    """Say what each ``unit`` (point, cell, line, bar) is tuned over, above the panels."""
    text = (
        f"each {unit}: best over {', '.join(over)}, mean over seeds" if over else "mean over seeds"
    )
    chars = int(fig.get_figwidth() * 17)  # about 17 characters per inch at 7 pt
    fig.suptitle(textwrap.fill(text, chars), fontsize=7, color="0.3")


def layout(n: int) -> tuple[Figure, list[Axes]]:
    """A paper-width figure with ``n`` panels, up to three per row."""
    style.apply()
    cols = min(n, style.MAX_COLUMNS)
    nrows = math.ceil(n / cols)
    width = style.PAGE_WIDTH if cols > 1 else style.PAGE_WIDTH / 2
    extra = 0.3 if cols > 1 else 0.9  # a lone panel shares its height with title and legend
    fig, axes = plt.subplots(
        nrows,
        cols,
        figsize=(width, style.ROW_HEIGHT * nrows + extra),
        squeeze=False,
        constrained_layout=True,
    )
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


@dataclass(frozen=True, slots=True)
class Points:
    """Tuned points of a figure."""

    table: pd.DataFrame
    """Best configuration per combination of the keys (:func:`harness.analysis.tuning.tune`)."""
    seeds: pd.DataFrame
    """The rows of those configurations (one per seed)."""
    over: list[str]
    """The hyperparameters tuned over."""


def tuned_points(
    rows: pd.DataFrame, keys: Sequence[str], goal: str, select_goal: str | None = None
) -> Points:
    """Best configuration per combination of ``keys``, over the hyperparameters that vary (by
    ``select_value`` when the rows carry it, with ``select_goal``)."""
    keys = list(keys)
    over = [c for c in auto_over(rows, keys) if c not in keys]
    check_cells(rows, keys, over)
    table = tune(rows, keys, over, goal, select_goal)
    return Points(table=table, seeds=best_runs(rows, table, keys + over), over=over)


def metric_label(metric: str) -> str:
    """Axis label of a metric (declared in :mod:`harness.metrics.catalogue`; else its name)."""
    declared = METRICS.get(metric)
    return declared.label if declared else metric


def use_log(values: np.ndarray) -> bool:
    """Log scale when the finite positive values span more than a decade."""
    v = values[np.isfinite(values)]
    return bool(v.size and (v > 0).all() and v.max() / v.min() > 10)


def legend(fig: Figure, axes: Sequence[Axes]) -> None:
    """One legend for the figure, from every panel's labelled artists, below the panels."""
    handles: dict[str, Any] = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if not lab.startswith("_"):
                handles.setdefault(lab, h)
    if handles:
        per_row = max(1, int(fig.get_figwidth() / 1.3))  # entries that fit the width
        fig.legend(
            list(handles.values()),
            list(handles),
            loc="outside lower center",
            ncols=min(len(handles), per_row),
            frameon=False,
        )


#: Default arms of figures comparing optimizers: baseline (SGD) and reference (Adam), in
#: order of preference; the first method present is used.
BASELINES = ("sgd",)
REFERENCES = ("adamw", "adam")


def pick(rows: pd.DataFrame, preferred: Sequence[str]) -> str | None:
    """The method of the first of ``preferred`` optimizers present: a method named like it
    (any case), else the shortest-named method of that optimizer (``SGD`` before ``SGD+Gclip``)."""
    methods = sorted(rows[METHOD].unique())
    for p in preferred:
        named = [m for m in methods if m.lower() == p]
        if named:
            return named[0]
        of_opt = sorted(set(rows.loc[rows["optimizer"] == p, METHOD]), key=lambda m: (len(m), m))
        if of_opt:
            return of_opt[0]
    return None


def restrict(df: pd.DataFrame, key: dict[str, Any]) -> pd.DataFrame:
    """The rows of ``df`` in the cell ``key`` (NULL matches NULL)."""
    mask = pd.Series(True, index=df.index)
    for k, v in key.items():
        mask &= df[k].isna() if pd.isna(v) else (df[k] == v)
    return df[mask]
