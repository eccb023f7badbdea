"""DuckDB over the results folder: SQL views ``runs``, ``curves`` and ``manifest``.

Views read the Parquet files directly, so a query always sees every row written so far: the
per-run files of running grids and the consolidated files of ``harness compact`` alike. A run
that appears more than once (a retried run whose old row was consolidated) shows its newest row.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from harness import paths
from harness.errors import UserError
from harness.results import CURVE_SCHEMA, config_schema, row_schema

#: (view name, per-run file glob under a grid folder, consolidated glob, schema for no files)
_SOURCES = {
    "runs": ("runs/*.parquet", "compact/runs-*.parquet"),
    "curves": ("curves/*.parquet", "compact/curves-*.parquet"),
    "manifest": ("manifest.parquet", None),
}


def _globs(root: Path, grids: list[str], view: str) -> list[str]:
    per_run, compacted = _SOURCES[view]
    out = []
    for g in grids:
        for pattern in (per_run, compacted):
            if pattern and any(paths.grid_dir(root, g).glob(pattern)):
                out.append(str(paths.grid_dir(root, g) / pattern))
    return out


def _empty_select(view: str) -> str:
    schema = {"runs": row_schema(), "curves": CURVE_SCHEMA, "manifest": config_schema()}[view]
    cols = ", ".join(f'CAST(NULL AS {_sql_type(f.type)}) AS "{f.name}"' for f in schema)
    return f"SELECT {cols} WHERE false"


def _sql_type(t: object) -> str:
    s = str(t)
    return {"int64": "BIGINT", "double": "DOUBLE", "string": "VARCHAR", "bool": "BOOLEAN"}.get(
        s, "TIMESTAMPTZ"
    )


def _view_sql(root: Path, grids: list[str], view: str) -> str:
    globs = _globs(root, grids, view)
    if not globs:
        return _empty_select(view)
    src = f"read_parquet({globs!r}, union_by_name = true)"
    if view == "runs":
        return (
            f"SELECT * FROM {src} "
            "QUALIFY row_number() OVER (PARTITION BY grid, run_id ORDER BY created_at DESC) = 1"
        )
    return f"SELECT * FROM {src}"


def connect(root: Path, grid: str | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with views over the results under ``root``.

    Args:
        root: the results root.
        grid: restrict the views to one grid; None: every grid under ``root``.

    Raises:
        UserError: ``grid`` has no results under ``root`` (lists the grids that do).
    """
    grids = paths.grids_in(root)
    if grid is not None:
        if grid not in grids:
            known = ", ".join(grids) or "none"
            raise UserError(f"no results for grid {grid!r} under {root}; grids there: {known}")
        grids = [grid]
    con = duckdb.connect(":memory:")
    for view in _SOURCES:
        con.execute(f"CREATE VIEW {view} AS {_view_sql(root, grids, view)}")
    return con


def result_statuses(root: Path, grid: str) -> dict[str, str]:
    """run_id -> status of every result row of ``grid`` (newest row per run)."""
    globs = _globs(root, [grid], "runs")
    if not globs:
        return {}
    con = duckdb.connect(":memory:")
    rows = con.execute(
        f"SELECT run_id, arg_max(status, created_at) FROM read_parquet({globs!r}, "
        "union_by_name = true) GROUP BY run_id"
    ).fetchall()
    return dict(rows)
