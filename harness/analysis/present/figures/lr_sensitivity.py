"""Metric vs learning rate per method: mean over seeds and a 2-sigma band.

At each learning rate the point is the best configuration over the other hyperparameters
(betas, momentum, ...). Diverged learning rates are marked with an ``x`` at the top of the panel
instead of being left out, so the edge of stability is visible. It is
:mod:`~harness.analysis.present.figures.metric_vs` along ``lr``.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from harness.analysis.present.figures.common import FigureData, FigureSkipped
from harness.analysis.present.figures.metric_vs import draw_along


def draw(data: FigureData) -> Figure:
    """The learning-rate sensitivity figure (see the module docstring)."""
    if data.rows["lr"].nunique() < 2:
        raise FigureSkipped("only one learning rate")
    return draw_along(data, "lr", "peak learning rate", log_x=True)
