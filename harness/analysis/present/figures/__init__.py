"""Figures, by name: the registry grids declare from (``figures:`` in a grid YAML).

Each figure lives in the module named after it (``beta_heatmap`` in ``beta_heatmap.py``), which
defines ``draw(data: FigureData) -> matplotlib.figure.Figure``. Importing this package is cheap
(no matplotlib): a figure's module is imported when it is drawn;
:func:`harness.analysis.present.figures.render.render_figures` draws them into
``results/<grid>/figures/``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.core.registry import Registry, load_object

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from harness.analysis.present.figures.common import FigureData


@dataclass(frozen=True, slots=True)
class FigureSpec:
    """A kind of figure."""

    name: str
    """Registry key, module name and file stem."""
    description: str
    """One line: what the figure shows."""
    needs: frozenset[str]
    """Axes that must all vary for the figure to be a default (empty: always a default)."""
    queries: tuple[str, ...] = ("runs",)
    """Named statements (:data:`harness.analysis.rows.queries.NAMED`) whose rows it draws."""
    by_run: tuple[str, ...] = ()
    """Of ``queries``, those it reads for the runs it draws only (:meth:`FigureData.curves`),
    never whole."""
    on_request: bool = False
    """Drawn only when asked for (``--figure``, or ``figures:`` in a grid), never a default."""

    def drawer(self) -> Callable[[FigureData], Figure]:
        """The figure's ``draw`` function (imports its module)."""
        draw: Callable[[FigureData], Figure] = load_object(f"{__name__}.{self.name}:draw")
        return draw


def _spec(name: str, description: str, needs: Iterable[str] = (), **kw: Any) -> FigureSpec:
    return FigureSpec(name=name, description=description, needs=frozenset(needs), **kw)


FIGURES: Registry[FigureSpec] = Registry(
    "figure",
    {
        s.name: s
        for s in (
            _spec(
                "beta_heatmap",
                "beta1 x beta2 heatmap of the tuned metric per optimizer",
                ("beta1", "beta2"),
            ),
            _spec(
                "lr_sensitivity",
                "metric vs learning rate per optimizer, mean and 2-sigma band",
                ("lr",),
            ),
            _spec(
                "batch_size",
                "tuned metric vs batch size per optimizer, crossover marked",
                ("batch_size",),
            ),
            _spec(
                "gap_closure",
                "gap closure between SGD and Adam per optimizer, with intervals",
                ("optimizer",),
            ),
            _spec(
                "loss_curves",
                "training loss vs tokens of each optimizer's tuned configuration",
                (),
                queries=("runs", "curves"),
                by_run=("curves",),
            ),
            _spec(
                "steps_to_target",
                "steps to a target loss vs batch size per optimizer, log-log, ideal scaling",
                ("batch_size",),
                queries=("runs", "curves"),
            ),
            _spec(
                "metric_vs",
                "metric vs any column (--x, default: an optimizer's own hyperparameter) per arm",
                on_request=True,
            ),
            _spec(
                "metric_vs_tokens",
                "a tracked metric (--metric) vs tokens per method, mean and 2-sigma band",
                queries=("runs", "curves"),
                on_request=True,
            ),
            _spec(
                "performance_profile",
                "AlgoPerf performance profile: fraction of cells within tau of the best arm's "
                "tokens-to-target (needs a target)",
                queries=("runs", "curves"),
                on_request=True,
            ),
            _spec(
                "embedding_scale",
                "embedding metrics and loss vs the Coupled Adam scale exponent",
                ("coupled_scale_exp",),
            ),
        )
    },
)
"""Every figure, by name."""


def default_figures(axes: Iterable[str]) -> list[str]:
    """The figures a grid gets when it declares none: those whose needed axes all vary."""
    varying = set(axes)
    return [name for name, spec in FIGURES.items() if spec.needs <= varying and not spec.on_request]
