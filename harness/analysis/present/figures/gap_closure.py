"""Gap closure per method between the baseline (SGD) and the reference (AdamW, else Adam).

Horizontal bars of (m_SGD - m_X) / (m_SGD - m_Adam) in percent, with Fieller intervals over
seeds (:mod:`harness.analysis.stats.baseline_gap`); 0 % and 100 % are drawn as reference lines. One
panel per condition.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from harness.analysis.present.figures.common import (
    BASELINES,
    REFERENCES,
    FigureData,
    FigureSkipped,
    chosen_arm,
    layout,
    panel_title,
    panels,
    subtitle,
)
from harness.analysis.stats import ARM, METHOD, gap_closure


def draw(data: FigureData) -> Figure:
    """The gap-closure figure (see the module docstring)."""
    rows = data.rows
    methods = list(rows[METHOD].unique())
    base = chosen_arm(rows, data.options.baseline, BASELINES, "--baseline")
    ref = chosen_arm(rows, data.options.reference, REFERENCES, "--reference")
    if base is None or ref is None:
        raise FigureSkipped(
            f"needs a baseline ({'/'.join(BASELINES)}, or --baseline K=V) and a reference "
            f"({'/'.join(REFERENCES)}, or --reference K=V); methods: {', '.join(sorted(methods))}"
        )
    if len(methods) < 3:
        raise FigureSkipped("no optimizer besides the baseline and the reference")
    keys = data.panels(rows)
    points = data.tuned(rows, [*keys, METHOD])
    seeds = points.seeds.assign(**{ARM: points.seeds[METHOD]})
    table = gap_closure(seeds, keys, base, ref)
    cells = panels(table, keys)
    fig, axes = layout(len(cells))
    for ax, (key, part) in zip(axes, cells, strict=True):
        _panel(ax, part, data, base, ref)
        ax.set_title(panel_title(key) or f"gap closure between {base} and {ref}")
    subtitle(fig, data, points, "bar", what=f"gap closed, {base} 0% to {ref} 100%")
    return fig


def _panel(ax: Axes, part: pd.DataFrame, data: FigureData, base: str, ref: str) -> None:
    part = part[~part[ARM].isin([base, ref])].sort_values("closure_pct")
    if part.empty:  # a condition where only the baseline and the reference ran
        ax.text(0.5, 0.5, "no other arm here", transform=ax.transAxes, ha="center", color="0.4")
        ax.set_yticks([])
        return
    y = np.arange(len(part))
    vals = part["closure_pct"].to_numpy(float)
    lo, hi = part["ci_low_pct"].to_numpy(float), part["ci_high_pct"].to_numpy(float)
    colors = [data.style(str(m)).color for m in part[ARM]]
    shown = np.nan_to_num(vals, nan=0.0, neginf=0.0, posinf=0.0)
    ax.barh(y, shown, color=colors, height=0.6)
    err = np.nan_to_num(np.vstack([vals - lo, hi - vals]), nan=0.0, posinf=0.0, neginf=0.0)
    ax.errorbar(shown, y, xerr=err, fmt="none", ecolor="0.2", capsize=2, linewidth=1)
    ends = np.fmax(np.nan_to_num(hi, nan=-np.inf, posinf=-np.inf), shown)
    span = max(100.0, *ends) - min(0.0, *np.nan_to_num(lo, nan=0.0, neginf=0.0), *shown)
    for yi, v, end, l_, h_ in zip(y, vals, ends, lo, hi, strict=True):
        label = "diverged" if np.isneginf(v) else ("-" if np.isnan(v) else f"{v:.1f}%")
        if np.isinf([l_, h_]).any() and np.isfinite(v):  # Fieller: the gap is not significant
            label += " (interval unbounded)"
        ax.text(max(end, 0.0) + 0.02 * span, float(yi), label, va="center", fontsize=6.5)
    ax.axvline(0, color="0.4", linewidth=0.8)
    ax.axvline(100, color="0.4", linewidth=0.8, linestyle="--")
    lows = np.concatenate([np.nan_to_num(lo, nan=0.0, neginf=0.0), shown])  # bars too: an
    left = min(0.0, *lows) - 0.05 * span  # interval may be unbounded (NaN)
    ax.set_xlim(left, max(100.0, *ends) + 0.25 * span)
    ax.set_yticks(y, list(part[ARM]))
    ax.grid(axis="y", visible=False)
    ax.set_xlabel(f"gap closed (%): {base} 0, {ref} 100")
