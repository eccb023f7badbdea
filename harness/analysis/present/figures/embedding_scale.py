"""Embedding metrics and the loss vs the Coupled Adam scale exponent n (paper Eq. 29, Sec. 6).

One panel per metric: the analysed metric (does scaling hurt the loss?) and each embedding
metric present (Iso, ||mu||, ||mu||^r, rho, kappa). Methods with a scale exponent are lines over
n (one per condition when conditions vary); methods without one (standard AdamW) are horizontal
dashed reference lines. At each n the configuration is the best by ``--select-by`` (the grid's
loss by default, as the paper selects), and every panel shows that configuration's mean and
2-sigma band over seeds. Iso is the paper's convention (``iso``; ``iso_sym`` is not drawn).
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
    subtitle,
)
from harness.analysis.stats import METHOD, VALUE
from harness.metrics.catalogue import METRICS, Producer, produced_by

X = "coupled_scale_exp"
EMBEDDING_METRICS = tuple(
    m for m in produced_by(Producer.EMBEDDING) if METRICS[m].goal and m != "iso_sym"
)
"""Embedding metrics drawn when present (those with a better direction)."""
#: Column naming each line.
SERIES = "_series"


def draw(data: FigureData) -> Figure:
    """The embedding-metric figure (see the module docstring)."""
    rows = data.rows
    if rows[X].nunique() < 2:
        raise FigureSkipped(f"fewer than two values of {X}")
    metrics = [data.metric] + [
        m for m in EMBEDDING_METRICS if m != data.metric and rows[m].notna().any()
    ]
    keys = data.panels(rows, [X])
    series = rows.assign(**{SERIES: _series_labels(rows, keys)})
    points = data.tuned(series, [*keys, METHOD, SERIES, X])
    seeds = points.seeds
    fig, axes = layout(len(metrics))
    for ax, metric in zip(axes, metrics, strict=True):
        _panel(ax, seeds, VALUE if metric == data.metric else metric, data)
        ax.set_title(metric_label(metric))
    legend(fig, axes)
    subtitle(fig, data, points, what="vs the Coupled Adam scale exponent")
    return fig


def _series_labels(rows: pd.DataFrame, keys: list[str]) -> list[str]:
    if not keys:
        return list(rows[METHOD])
    return [
        f"{m}, {panel_title(dict(zip(keys, vals, strict=True)))}"
        for m, vals in zip(rows[METHOD], rows[keys].itertuples(index=False), strict=True)
    ]


def _panel(ax: Axes, seeds: pd.DataFrame, metric: str, data: FigureData) -> None:
    for label, part in seeds.groupby(SERIES, sort=True):
        st = data.style(str(part[METHOD].iloc[0]))
        g = part.groupby(X, dropna=False)[metric]
        mean, band = g.mean(), 2 * g.std(ddof=1).fillna(0.0)
        if mean.index.isna().all():  # no scale exponent: a reference line
            ax.axhline(mean.iloc[0], color=st.color, linestyle="--", label=label)
            ax.axhspan(
                mean.iloc[0] - band.iloc[0],
                mean.iloc[0] + band.iloc[0],
                color=st.color,
                alpha=0.12,
                lw=0,
            )
            continue
        mean, band = mean[mean.index.notna()], band[band.index.notna()]
        ok = np.isfinite(mean.to_numpy(float))
        ax.plot(mean.index[ok], mean[ok], label=label, **st.line())
        ax.fill_between(
            mean.index[ok],
            (mean - band)[ok],
            (mean + band)[ok],
            color=st.color,
            alpha=0.18,
            lw=0,
        )
    ax.set_xlabel("scale exponent n (v_hat * 2^-n)")
