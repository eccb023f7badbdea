"""SQL over the results (``harness query``): the rows as a DataFrame, as text, or in a file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from harness.core import paths
from harness.core.errors import UserError
from harness.core.files import atomic_write_text

if TYPE_CHECKING:
    import pandas as pd

    from harness.store.confine import Confinement

Grids = str | Path | Sequence[str | Path] | None
"""A grid YAML path or a grid name in the results, several, or None (every grid)."""
QueryFormat = Literal["table", "csv", "json", "parquet"]
"""How :func:`export` writes a result (``parquet`` only to a file)."""
QUERY_FORMATS: tuple[QueryFormat, ...] = ("table", "csv", "json", "parquet")
"""Every :data:`QueryFormat`, in ``--format``'s order."""


def _grid_names(grid: Grids) -> list[str] | None:
    """Names of ``grid`` (grid YAML paths or names in the results); None: every grid."""
    from harness.grid.load import grid_name

    if grid is None:
        return None
    given = [grid] if isinstance(grid, str | Path) else list(grid)
    return [grid_name(str(g)) for g in given]


def _confinement(unsafe: bool, memory_limit: str | None) -> Confinement:
    from harness.store.confine import Confinement

    return Confinement.from_env(unsafe=unsafe, memory_limit=memory_limit)


def query(
    sql: str,
    grid: Grids = None,
    *,
    results: str | Path | None = None,
    unsafe: bool = False,
    memory_limit: str | None = None,
) -> pd.DataFrame:
    """The rows of ``sql`` over the views ``runs``, ``curves``, ``manifest`` and ``evals``
    (``harness query``): a SELECT reading only the results folder unless ``unsafe`` (also
    ``HARNESS_SQL_UNSAFE=1``).

    Args:
        sql: the statement.
        grid: restrict the views to this grid (a grid YAML path or a name in the results), or
            these; None: every grid under the results root.
        results: the results root (None: ``$HARNESS_RESULTS``, then ``./results``).
        unsafe: full DuckDB: any statement, files anywhere, extensions.
        memory_limit: DuckDB's memory limit, and the most the result may hold (``4GB``,
            ``512MiB``, ``25%``; None: ``$HARNESS_SQL_MEMORY``, then 25%).

    Raises:
        UserError: the SQL is refused or fails, returns no rows, or its result holds more than
            the memory limit.
        KeyboardInterrupt: Ctrl-C stopped it.

    Example::

        best = api.query("SELECT lr, val_loss FROM runs ORDER BY val_loss LIMIT 5", "grids/x.yaml")
    """
    from harness.store.fetch import fetch

    how = _confinement(unsafe, memory_limit)
    return fetch(paths.results_root(results), sql, _grid_names(grid), how)


def query_text(frame: pd.DataFrame, fmt: QueryFormat = "table", max_rows: int = 50) -> str:
    """``frame`` as ``harness query`` prints it: an aligned table of at most ``max_rows`` rows
    (``table``), CSV or JSON records."""
    import pandas as pd

    if fmt == "csv":
        return frame.to_csv(index=False)
    if fmt == "json":
        return frame.to_json(orient="records", date_format="iso") + "\n"
    if fmt != "table":
        raise UserError(f"--format {fmt}: as text, one of table, csv, json")
    with pd.option_context(
        "display.max_rows", max_rows, "display.max_columns", 30, "display.width", 200
    ):
        shown = frame if len(frame) <= max_rows else frame.head(max_rows)
        tail = "" if len(frame) <= max_rows else f"... ({len(frame)} rows, {max_rows} shown)\n"
        return shown.to_string(index=False) + "\n" + tail


def export(
    sql: str,
    output: str | Path,
    grid: Grids = None,
    *,
    fmt: QueryFormat = "parquet",
    max_rows: int = 50,
    results: str | Path | None = None,
    unsafe: bool = False,
    memory_limit: str | None = None,
) -> Path:
    """Write the rows of ``sql`` (see :func:`query`) to ``output``: Parquet written by DuckDB
    (no memory limit on the result), or :func:`query_text`'s text; either through a temporary
    name in its folder, so that no half-written file is left.

    Raises:
        UserError: see :func:`query`. OSError: ``output`` cannot be written (names it).
    """
    out = Path(output)
    if fmt != "parquet":
        text = query_text(
            query(sql, grid, results=results, unsafe=unsafe, memory_limit=memory_limit),
            fmt,
            max_rows,
        )
        atomic_write_text(out, text)  # an OSError names the file; nothing half-written
        return out
    from harness.store.fetch import write_parquet

    how = _confinement(unsafe, memory_limit)
    return write_parquet(paths.results_root(results), sql, out, _grid_names(grid), how)
