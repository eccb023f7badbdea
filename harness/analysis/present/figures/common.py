"""What every figure shares: its input, methods (lines), panels (conditions), tuned points.

Lines are *methods*: the optimizer, plus ``embedding_optimizer`` or ``grad_clip`` when those
vary for it (``sgd (grad_clip=1)``). Panels are the other conditions that vary (model, batch
size, tokens, ...). Everything else that varies is a hyperparameter and is tuned over: each point
of a figure is the best configuration by the mean over seeds, as in ``harness analyze best``.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from harness.analysis.present.figures import style
from harness.analysis.present.figures.options import FigureOptions
from harness.analysis.rows.arm_labels import panel_keys, short
from harness.analysis.rows.axes import check_cells, varying_within
from harness.analysis.rows.conditions import auto_over
from harness.analysis.rows.selectors import Selector, match
from harness.analysis.rows.tuning import confirmed, is_confirmation
from harness.analysis.stats import METHOD, iter_cells
from harness.core.errors import UserError
from harness.metrics.catalogue import METRICS, Goal

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
    goal: Goal
    """``min`` or ``max``."""
    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    """Further query results by name (e.g. ``curves``)."""
    select_goal: Goal | None = None
    """``min`` or ``max`` of ``select_value``, when another metric selects configurations."""
    styles: dict[str, style.ArmStyle] = field(default_factory=dict)
    """Arm -> style, assigned over every arm of the grid (:func:`arm_styles`); empty: from
    ``rows``."""
    missing: tuple[str, ...] = ()
    """Lines naming the arms with no completed or diverged run (failed, absent), for the note."""
    options: FigureOptions = field(default_factory=FigureOptions)
    """The user's options."""
    curves_of: Callable[[Collection[str]], pd.DataFrame] | None = None
    """Reads the ``curves`` rows of some runs only
    (:meth:`harness.analysis.rows.load.Selection.curves_of`); None: filter
    ``frames["curves"]``."""
    curve_points: int | None = None
    """Rows of the ``curves`` statement over the whole selection (None: ``frames["curves"]``'s)."""

    def has_curves(self) -> bool:
        """Whether the selection has any curve point."""
        if self.curve_points is not None:
            return self.curve_points > 0
        curves = self.frames.get("curves")
        return curves is not None and not curves.empty

    def curves(self, run_ids: Collection[str]) -> pd.DataFrame:
        """The curve points of ``run_ids`` only, in (run_id, step) order: a figure that draws
        some runs reads their points, not the whole selection's."""
        if self.curves_of is not None:
            return self.curves_of(run_ids)
        curves = self.frames["curves"]
        return curves[curves["run_id"].isin(set(run_ids))].reset_index(drop=True)

    def panels(self, rows: pd.DataFrame, exclude: Sequence[str] = ()) -> list[str]:
        """The panel keys of ``rows``: the conditions that vary (:func:`panel_keys`), but
        ``exclude`` and those the user pools (``--pool``).

        Raises:
            FigureSkipped: more than :data:`MAX_PANELS` panels: counted here, before any point
                is tuned (a figure of 100 panels cost seconds of tuning, then was skipped).
        """
        keys = panel_keys(rows, [*exclude, *self.options.pool])
        count_panels(rows, keys)
        return keys

    def tuned(self, rows: pd.DataFrame, keys: Sequence[str]) -> Points:
        """:func:`tuned_points` of ``rows`` by ``keys``, with this figure's goals and the
        pooled conditions tuned over."""
        return tuned_points(rows, keys, self.goal, self.select_goal, self.options.pool)

    def style(self, method: str) -> style.ArmStyle:
        """The arm's color, marker and line style."""
        if method in self.styles:
            return self.styles[method]
        return arm_styles(self.rows)[method]


def arm_styles(rows: pd.DataFrame) -> dict[str, style.ArmStyle]:
    """Arm -> style for every ``method`` of ``rows`` (:func:`style.assign`: a fixed order)."""
    pairs = rows[[METHOD, "optimizer"]].drop_duplicates()
    return style.assign(zip(pairs[METHOD].astype(str), pairs["optimizer"].astype(str), strict=True))


def missing_arms(every: pd.DataFrame, drawn: pd.DataFrame) -> list[str]:
    """One line per arm of ``every`` (rows of any status, planned runs with NaN status) with no
    row in ``drawn``: ``signsgd: 4 failed``, ``lion: no result yet``."""
    out = []
    for arm, part in every[~every[METHOD].isin(set(drawn[METHOD]))].groupby(METHOD, sort=True):
        counts = part.drop_duplicates("run_id")["status"].fillna("no result yet").value_counts()
        text = ", ".join(
            f"{n} {s}" if s != "no result yet" else s for s, n in sorted(counts.items())
        )
        out.append(f"{arm}: {text}")
    return out


def count_panels(rows: pd.DataFrame, keys: Sequence[str]) -> int:
    """How many panels ``rows`` make by ``keys`` (distinct values of the keys).

    Raises:
        FigureSkipped: more than :data:`MAX_PANELS`.
    """
    n = len(rows[list(keys)].drop_duplicates()) if keys and not rows.empty else 1
    if n > MAX_PANELS:
        raise FigureSkipped(
            f"{n} panels (one per {', '.join(keys)}, at most {MAX_PANELS}); restrict the rows "
            "with --where"
        )
    return n


def panels(rows: pd.DataFrame, keys: Sequence[str]) -> list[tuple[dict[str, Any], pd.DataFrame]]:
    """The panels' keys and rows; too many panels skip the figure."""
    count_panels(rows, keys)
    return list(iter_cells(rows, keys))


def panel_title(key: dict[str, Any]) -> str:
    """``adamw, batch_size=256``: the method by name, conditions as ``column=value``."""
    parts = [str(v) if k == METHOD else f"{k}={short(v)}" for k, v in key.items()]
    return ", ".join(parts)


def subtitle(
    fig: Figure,
    data: FigureData,
    points: Points | None,
    unit: str = "point",
    what: str = "",
    reading: str = "",
) -> None:
    """Above the panels: what the figure is about (:func:`describe`), what each ``unit``
    (point, cell, line, bar) is tuned over and the seeds it is the mean of (those of
    ``points.seeds``: confirmation or tuning seeds; None: one configuration per ``unit``, over
    every seed of the rows; ``reading``: the figure says itself), and the arms it cannot show."""
    over = points.over if points is not None else []
    seeds = points is None and not reading
    lines = [describe(data.rows, what, seeds=seeds, scale_name=data.options.scale_name)]
    tuned = f"each {unit}: best over {', '.join(over)}" if over else f"each {unit}: one config"
    if reading:
        lines.append(reading)
    elif points is None:
        n_seeds = int(data.rows["seed"].nunique()) if "seed" in data.rows.columns else 1
        lines.append(tuned + (f", mean over {n_seeds} seeds" if n_seeds > 1 else ", one seed"))
    else:
        lines.append(f"{tuned}, {seeds_used(points)}")
    if data.missing:
        lines.append("not shown (no completed or diverged run): " + "; ".join(data.missing))
    chars = int(fig.get_figwidth() * 17)  # about 17 characters per inch at 7 pt
    text = "\n".join(textwrap.fill(line, chars) for line in lines)
    fig.suptitle(text, fontsize=7, color="0.25")


def seeds_used(points: Points) -> str:
    """The seeds each point of ``points`` is the mean of, read from ``points.seeds`` (the
    rows the figure draws): ``mean over 3 confirmation seeds``, ``mean over 3 tuning seeds
    (selected and tested on the same seeds)``, ``one seed``; both kinds, with how many of the
    selected configurations each, when only some cells have confirmation runs."""
    seeds = points.seeds
    if seeds.empty or "seed" not in seeds.columns:
        return "one seed"
    fresh = is_confirmation(seeds)
    groups = [(k, seeds[m]) for k, m in (("confirmation", fresh), ("tuning", ~fresh)) if m.any()]
    parts = []
    for kind, part in groups:
        by = part.groupby(points.keys, dropna=False) if points.keys else part.groupby(lambda _: 0)
        counts = by["seed"].nunique()
        low, high = int(counts.min()), int(counts.max())
        name = f"{kind} " if kind == "confirmation" or points.over else ""
        text = f"one {name}seed" if high == 1 else f"mean over {low}{f'-{high}' * (low < high)} "
        text += "" if high == 1 else f"{name}seeds"
        notes = [f"{len(counts)} of {len(points.table)} configs"] if len(groups) > 1 else []
        if kind == "tuning" and points.over:
            notes.append(f"selected and tested on the same seed{'s' * (high > 1)}")
        parts.append(text + (f" ({': '.join(notes)})" if notes else ""))
    return "; ".join(parts)


#: (column, how it is named) of the figure's title, in order.
_TITLE_FIELDS = (("lr", "lr"), ("model", "model"), ("tokens", "tokens"), ("steps", "steps"))


def describe(
    rows: pd.DataFrame, what: str = "", seeds: bool = True, scale_name: str | None = None
) -> str:
    """One line: ``what``, the arm(s), lr, model, budget, steps, seeds (unless not ``seeds``:
    the caller says which seeds it draws) and scale of ``rows`` (a single value, or the range a
    varying one spans; ``scale_name``: how the scale is named instead of the rows')."""
    parts = [what] if what else []
    arms = sorted(rows[METHOD].astype(str).unique()) if METHOD in rows.columns else []
    parts.append(arms[0] if len(arms) == 1 else f"{len(arms)} arms")
    for col, name in _TITLE_FIELDS:
        if col not in rows.columns or rows[col].isna().all():
            continue
        vals = rows[col].dropna().unique()
        if len(vals) == 1:
            parts.append(f"{name}={short(vals[0])}")
        elif pd.api.types.is_numeric_dtype(rows[col]):
            parts.append(f"{name}={short(min(vals))}..{short(max(vals))}")
        else:
            parts.append(f"{name}={'/'.join(sorted(map(str, vals)))}")
    if seeds and "seed" in rows.columns:
        n = int(rows["seed"].nunique())
        parts.append(f"{n} seed{'s' if n != 1 else ''}")
    if scale_name is not None:
        parts.append(scale_name)
    elif "scale" in rows.columns and rows["scale"].nunique() == 1:
        parts.append(f"{rows['scale'].iloc[0]} scale")
    return " | ".join(parts)


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
    """Best configuration per combination of the keys
    (:func:`harness.analysis.rows.tuning.tune`)."""
    seeds: pd.DataFrame
    """The rows of those configurations (one per seed)."""
    over: list[str]
    """The hyperparameters tuned over."""
    keys: list[str] = field(default_factory=list)
    """The columns that make one point (panel keys, method, the figure's x)."""


def tuned_points(
    rows: pd.DataFrame,
    keys: Sequence[str],
    goal: Goal,
    select_goal: Goal | None = None,
    pool: Sequence[str] = (),
) -> Points:
    """Best configuration per combination of ``keys``, over the hyperparameters that vary (by
    ``select_value`` when the rows carry it, with ``select_goal``) and the conditions ``pool``.

    Raises:
        FigureSkipped: every row is a confirmation run (confirmation runs never select).
    """
    keys = list(keys)
    over = [c for c in auto_over(rows, keys) if c not in keys]
    over += [c for c in varying_within(rows, keys, pool) if c not in over]
    check_cells(rows, keys, over)
    tested = confirmed(rows, keys, over, goal, select_goal)
    if tested.table.empty:
        raise FigureSkipped(
            "no tuning run among the rows (only confirmation runs, which never select): "
            "widen --where to the tuning runs too"
        )
    return Points(table=tested.table, seeds=tested.seeds, over=over, keys=keys)


def points_along(data: FigureData, x: str, what: str) -> tuple[list[str], Points]:
    """(panel keys, tuned points per panel, method and ``x``) of a figure drawn along ``x``.

    Raises:
        FigureSkipped: ``x`` takes one value (``what`` names it: "batch size").
    """
    if data.rows[x].nunique() < 2:
        raise FigureSkipped(f"only one {what}")
    keys = data.panels(data.rows, [x])
    return keys, data.tuned(data.rows, [*keys, METHOD, x])


def metric_label(metric: str) -> str:
    """Axis label of a metric (declared in :mod:`harness.metrics.catalogue`; else its name)."""
    declared = METRICS.get(metric)
    return declared.label if declared else metric


def use_log(values: np.ndarray) -> bool:
    """Log scale when the finite positive values span more than a decade."""
    v = values[np.isfinite(values)]
    return bool(v.size and (v > 0).all() and v.max() / v.min() > 10)


LEGEND_ROW_IN = 0.16
"""Height of one row of the figure legend (inches, at the style's legend font size)."""
LEGEND_KEY_IN = 0.45
"""Width of a legend entry's line sample and padding (inches)."""
LEGEND_CHAR_IN = 0.055
"""Width of one character of a legend label (inches)."""


def legend(fig: Figure, axes: Sequence[Axes]) -> None:
    """One legend for the figure, from every panel's labelled artists, below the panels."""
    handles: dict[str, Any] = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if not lab.startswith("_"):
                handles.setdefault(lab, h)
    if handles:
        widest = LEGEND_KEY_IN + LEGEND_CHAR_IN * max(len(lab) for lab in handles)
        per_row = max(1, int(fig.get_figwidth() / max(1.3, widest)))  # entries that fit the width
        rows = math.ceil(len(handles) / per_row)
        # the panels keep their height: the figure grows by the legend's rows beyond the one
        # :func:`layout` leaves room for (else constrained layout collapses the panels to
        # nothing and says so on the user's terminal)
        fig.set_figheight(fig.get_figheight() + (rows - 1) * LEGEND_ROW_IN)
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
    methods: list[str] = sorted(rows[METHOD].unique())  # labels are strings (add_methods)
    for p in preferred:
        named = [m for m in methods if m.lower() == p]
        if named:
            return named[0]
        of_opt: list[str] = sorted(
            set(rows.loc[rows["optimizer"] == p, METHOD]), key=lambda m: (len(m), m)
        )
        if of_opt:
            return of_opt[0]
    return None


def chosen_arm(
    rows: pd.DataFrame, chosen: Selector | None, preferred: Sequence[str], flag: str
) -> str | None:
    """The arm ``chosen`` selects (``--baseline optimizer=sgd,grad_clip=null``), else
    :func:`pick` of ``preferred``.

    Raises:
        UserError: the selector matches no row, or rows of several arms (naming them).
    """
    if chosen is None:
        return pick(rows, preferred)
    arms: list[str] = sorted(rows.loc[match(rows, chosen, flag), METHOD].astype(str).unique())
    if len(arms) > 1:
        raise UserError(
            f"{flag} {chosen.text!r} matches several arms: {', '.join(arms)}; add a column, "
            "e.g. label=NAME"
        )
    return arms[0]


def restrict(df: pd.DataFrame, key: dict[str, Any]) -> pd.DataFrame:
    """The rows of ``df`` in the cell ``key`` (NULL matches NULL)."""
    mask = pd.Series(True, index=df.index)
    for k, v in key.items():
        mask &= df[k].isna() if pd.isna(v) else (df[k] == v)
    return df[mask]
