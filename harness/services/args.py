"""The arguments every service takes as a caller types them: grids, the results root, the data
root (a path, a string or None for the default), and the keywords that choose the rows read
(:class:`Selecting`, handed on as one :class:`~harness.analysis.questions.query.Query`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from harness.analysis.questions.query import Query
    from harness.analysis.rows.direction import GoalChoice

Grids = str | Path | Sequence[str | Path] | None
"""A grid YAML path or a grid name in the results, several (arms compared across grids), or
None (every grid under the results root)."""


def grid_args(grid: Grids) -> list[str]:
    """``grid`` as a list of grid arguments (empty: every grid)."""
    if grid is None:
        return []
    if isinstance(grid, str | Path):
        return [str(grid)]
    return [str(g) for g in grid]


def results_arg(results: str | Path | None) -> str | None:
    """A results root as the analysis takes it (None: the default)."""
    return str(results) if results is not None else None


def path_arg(value: str | Path | None) -> Path | None:
    """An optional path argument as a Path."""
    return Path(value) if value is not None else None


def data_dir(data: str | Path | None) -> Path:
    """The data root of ``data`` (None: ``$HARNESS_DATA``, then the data home), as every command
    resolves it (:func:`harness.data.catalogue.data_root`).

    Raises:
        UserError: ``data`` is not a folder.
    """
    from harness.data.catalogue import data_root

    return data_root(path_arg(data))


class Selecting(TypedDict, total=False):
    """The keywords that choose a grid's rows and the metric read from them, as every service
    that reads results takes them (:func:`rows`, :func:`report`, ``api.figures``,
    ``api.analyze``; the options ``--results``, ``--where``, ``--scale``, ``--metric``,
    ``--goal`` and ``--select-by`` of their commands). Declared once, here; their defaults are
    the fields' of the value they become, :class:`harness.analysis.questions.query.Query`
    (:func:`query_of`)."""

    results: str | Path | None
    """Results root (None: ``$HARNESS_RESULTS``, then ``./results``)."""
    where: str | None
    """SQL predicate over the runs' columns (``"lr < 0.01"``)."""
    scale: str | None
    """``full`` or ``local`` (None: the only scale present)."""
    metric: str
    """The column analysed (``val_ppl``, falling back to ``val_loss`` where no run has it)."""
    goal: GoalChoice
    """``min``, ``max`` or ``auto`` (the metric's known direction)."""
    select_by: str | None
    """The metric whose mean over seeds picks each cell's configuration (None: the grid's
    loss)."""


SELECTING = tuple(Selecting.__annotations__)
"""The names of :class:`Selecting`'s keywords."""


def query_of(grid: Grids, selecting: Selecting, pool: Sequence[str] = ()) -> Query:
    """The rows ``grid`` and ``selecting`` choose, as one value (conditions in ``pool`` pooled
    instead of being cells); a keyword not given takes the :class:`Query` field's default."""
    from harness.analysis.questions.query import Query

    unknown = sorted(set(selecting) - set(SELECTING))
    if unknown:  # a caller that bypasses the type checker: the same error as a bad keyword
        raise TypeError(f"unexpected keyword argument(s) {unknown}; valid: {', '.join(SELECTING)}")
    rest = {k: v for k, v in selecting.items() if k != "results"}
    return Query(
        grid=grid_args(grid) or None,
        results=results_arg(selecting.get("results")),
        pool=tuple(pool),
        **rest,  # type: ignore[arg-type]  # (Selecting's other keys: Query's fields, typed alike)
    )
