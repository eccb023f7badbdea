"""A grid's results read back as the analysis reads them: its rows with the chosen metric,
each cell's selected configuration, and the HTML report."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Unpack

from harness.services.args import Grids, Selecting, query_of

if TYPE_CHECKING:
    import pandas as pd

    from harness.analysis.rows.selectors import Selector
    from harness.followup.selected import Tuned as Tuned  # the type of tuned(), for callers
    from harness.metrics.catalogue import Goal


@dataclass(frozen=True, slots=True)
class Rows:
    """A grid's result rows as the analysis reads them (:func:`rows`)."""

    frame: pd.DataFrame
    """One row per run with a result (completed or diverged; failed runs dropped): its config
    columns, its metrics, and ``value``: ``metric`` (the worst value for a diverged run)."""
    metric: str
    """The metric in ``value`` (the one asked for, or its fallback: ``notes``)."""
    goal: Goal
    """Which direction of ``metric`` is better."""
    select_by: str
    """The metric that selects each cell's configuration (in ``select_value`` when it is not
    ``metric``)."""
    notes: tuple[str, ...] = ()
    """Why the metric is not the one asked for, for the reader."""


def rows(grid: Grids = None, **selecting: Unpack[Selecting]) -> Rows:
    """``grid``'s result rows (``runs`` of :func:`harness.api.connect`, newest attempt per run),
    with the metric chosen as ``harness analyze`` chooses it (``selecting``: the keywords of
    :class:`~harness.services.args.Selecting`) and ``value`` attached.

    Raises:
        UserError: no results (at ``scale``), a bad ``where``, a metric no run has.
    """
    from harness.analysis.rows.load import select
    from harness.analysis.rows.metric_choice import choose_metric
    from harness.analysis.rows.preparation import prepare

    q = query_of(grid, selecting)
    df = select(q.grid, results=q.results, scale=q.scale, where=q.where).frame("runs")
    c = choose_metric(df, q.metric, q.goal, q.select_by)
    prepared = prepare(df, c.metric, c.goal, c.select_by, c.select_goal)
    return Rows(prepared.rows, c.metric, c.goal, c.select_by, c.notes)


def cells(frame: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(cell keys, tuned columns) of result rows, as ``submit --extend``/``--confirm`` read
    them: the experiment columns that are not hyperparameters define a cell (optimizer, batch
    size, budget, ...); the hyperparameters that vary inside one are tuned."""
    from harness.followup.selected import cells as found

    return found(frame)


def tuned(
    frame: pd.DataFrame,
    goal: Goal,
    *,
    keys: Sequence[str] | None = None,
    over: Sequence[str] | None = None,
) -> Tuned:
    """Each cell's selected configuration over tuning rows (``frame``: :attr:`Rows.frame` of
    tuning runs), as ``submit --confirm`` selects it: the best per cell by the mean over seeds,
    the side of each tuned axis's searched values it sits on (``<axis>_edge``), and
    :meth:`~harness.followup.selected.Tuned.line` through it. ``keys``, ``over``: the cell
    columns and the tuned ones (None: as :func:`cells` finds them)."""
    from harness.followup.selected import select

    return select(frame, goal, keys, over)


def report(
    grid: Grids = None,
    *,
    output: str | Path | None = None,
    names: Sequence[str] = (),
    baseline: Selector | str | None = None,
    reference: Selector | str | None = None,
    runs: str = "all",
    pool: Sequence[str] = (),
    scale_name: str | None = None,
    **selecting: Unpack[Selecting],
) -> str:
    """The self-contained HTML report of ``grid`` (``harness report``): figures, toggleable loss
    curves, the best-per-cell and gap tables, provenance. Written to ``output`` when given
    (atomically); returned either way. ``runs``: the ``loss_curves`` figure's (``all`` runs of
    each cell, or each arm's ``best``); ``scale_name``: how the page names the runs' scale
    (``harness bench``'s ``local scale``; None: ``<scale> scale``); ``selecting``: the keywords
    of :class:`~harness.services.args.Selecting` (which rows, which metric)."""
    from harness.analysis.present.figures.options import FigureOptions
    from harness.analysis.present.report import ReportRequest, build_report
    from harness.analysis.rows.selectors import as_selector
    from harness.core.files import atomic_write_text

    options = FigureOptions(
        runs=runs,
        baseline=as_selector(baseline, "--baseline"),
        reference=as_selector(reference, "--reference"),
        pool=tuple(pool),
        scale_name=scale_name,
    )
    html = build_report(ReportRequest(query_of(grid, selecting, pool), tuple(names), options))
    if output is not None:
        atomic_write_text(Path(output), html)
    return html
