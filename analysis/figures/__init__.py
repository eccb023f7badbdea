"""Figures, by name: the registry grids declare from (``figures:`` in a grid YAML).

Importing this package is cheap (no matplotlib): each figure's module is imported when drawn.
:func:`analysis.figures.render.render_figures` draws them into ``results/<grid>/figures/``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class FigureSpec:
    """A kind of figure."""

    name: str
    """Registry key and file stem."""
    description: str
    """One line: what the figure shows."""
    module: str
    """Module defining ``draw(data: FigureData) -> matplotlib.figure.Figure``."""
    needs: frozenset[str]
    """Axes that must all vary for the figure to be a default (empty: always a default)."""
    queries: tuple[str, ...] = ("runs",)
    """Named statements (:data:`analysis.queries.NAMED`) whose rows it draws."""

    def drawer(self) -> Callable[[Any], Any]:
        """The figure's ``draw`` function (imports its module)."""
        return importlib.import_module(self.module).draw


def _spec(
    name: str, description: str, module: str, needs: Iterable[str] = (), **kw: Any
) -> FigureSpec:
    return FigureSpec(
        name=name,
        description=description,
        module=f"analysis.figures.{module}",
        needs=frozenset(needs),
        **kw,
    )


#: Every figure, by name.
FIGURES: dict[str, FigureSpec] = {
    s.name: s
    for s in (
        _spec(
            "beta_heatmap",
            "beta1 x beta2 heatmap of the tuned metric per optimizer",
            "heatmap",
            ("beta1", "beta2"),
        ),
        _spec(
            "lr_sensitivity",
            "metric vs learning rate per optimizer, mean and 2-sigma band",
            "lr_sensitivity",
            ("lr",),
        ),
        _spec(
            "batch_size",
            "tuned metric vs batch size per optimizer, crossover marked",
            "batch_size",
            ("batch_size",),
        ),
        _spec(
            "gap_closure",
            "gap closure between SGD and Adam per optimizer, with intervals",
            "gap_bars",
            ("optimizer",),
        ),
        _spec(
            "loss_curves",
            "training loss vs tokens of each optimizer's tuned configuration",
            "loss_curves",
            (),
            queries=("runs", "curves"),
        ),
        _spec(
            "embedding_scale",
            "embedding metrics and loss vs the Coupled Adam scale exponent",
            "embedding",
            ("coupled_scale_exp",),
        ),
    )
}


def default_figures(axes: Iterable[str]) -> list[str]:
    """The figures a grid gets when it declares none: those whose needed axes all vary."""
    varying = set(axes)
    return [name for name, spec in FIGURES.items() if spec.needs <= varying]
