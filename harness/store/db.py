"""DuckDB over the results folder: SQL views ``runs``, ``curves`` and ``manifest``.

Views read the Parquet files directly, so a query always sees every row written so far: the
per-run files of running grids and the consolidated files of ``harness compact`` alike. A run
that appears more than once (a retried run whose old row was consolidated, or a compaction
stopped between writing its file and removing what it covered) shows its newest row in ``runs``;
in ``curves`` it shows the points of its per-run curve file when there is one, else those of the
newest consolidated generation that holds it (see :func:`curves_select`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from harness.core import paths
from harness.core.errors import UserError
from harness.store.schema import CURVE_SCHEMA, config_schema, row_schema

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


def sql_string(text: str) -> str:
    """``text`` as a SQL string literal (single quotes doubled)."""
    return "'" + text.replace("'", "''") + "'"


def sql_list(items: list[str]) -> str:
    """A SQL list literal of strings: ``['a', 'b']``."""
    return "[" + ", ".join(sql_string(i) for i in items) + "]"


def curves_select(per_run: str | list[str] | None, compacted: list[str]) -> str:
    """SELECT of one grid's curve points from per-run files and consolidated generations.

    A run's points come from its per-run file when one exists (even an empty one), else from the
    newest generation holding the run, so a run present in several places is never counted twice.

    Args:
        per_run: the grid's per-run curve files: a glob, an explicit list, or None (none).
        compacted: the grid's ``compact/curves-<gen>.parquet`` files (zero-padded generations).
    """
    parts = []
    if per_run:
        parts.append(f"SELECT * FROM read_parquet({_files_sql(per_run)}, union_by_name = true)")
    if compacted:
        src = f"read_parquet({sql_list(compacted)}, union_by_name = true, filename = true)"
        sql = f"SELECT * EXCLUDE (filename) FROM {src}"
        if per_run:
            files = (
                f"SELECT file FROM glob({sql_string(per_run)})"
                if isinstance(per_run, str)
                else f"SELECT unnest({sql_list(per_run)}) AS file"
            )
            sql += f" WHERE run_id NOT IN (SELECT parse_filename(file, true) FROM ({files}))"
        if len(compacted) > 1:  # a run in several generations: the newest (names sort by gen)
            sql += " QUALIFY filename = max(filename) OVER (PARTITION BY grid, run_id)"
        parts.append(sql)
    if not parts:
        return _empty_select("curves")
    return " UNION ALL BY NAME ".join(f"({p})" for p in parts)


def _files_sql(files: str | list[str]) -> str:
    return sql_string(files) if isinstance(files, str) else sql_list(files)


def _curves_sql(root: Path, grids: list[str]) -> str:
    """The ``curves`` view: one plain scan over the grids whose points live in one place (only
    per-run files, or one consolidated generation), a deduplicating SELECT for the others."""
    plain: list[str] = []
    mixed: list[str] = []
    per_run_glob, compacted_glob = _SOURCES["curves"]
    for g in grids:
        folder = paths.grid_dir(root, g)
        per_run = str(folder / per_run_glob) if any(folder.glob(per_run_glob)) else None
        compacted = sorted(str(p) for p in folder.glob(compacted_glob))
        if per_run and not compacted:
            plain.append(per_run)
        elif compacted and not per_run and len(compacted) == 1:
            plain.append(compacted[0])
        elif per_run or compacted:
            mixed.append(curves_select(per_run, compacted))
    if plain:
        mixed.insert(0, f"SELECT * FROM read_parquet({sql_list(plain)}, union_by_name = true)")
    if not mixed:
        return _empty_select("curves")
    return " UNION ALL BY NAME ".join(f"({p})" for p in mixed)


def _view_sql(root: Path, grids: list[str], view: str) -> str:
    if view == "curves":
        return _curves_sql(root, grids)
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


def connect(root: Path, grid: str | Sequence[str] | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with views over the results under ``root``.

    Args:
        root: the results root.
        grid: restrict the views to one grid (a name) or to several (a sequence of names);
            None: every grid under ``root``.

    Raises:
        UserError: a grid has no results under ``root`` (lists the grids that do).
    """
    grids = paths.grids_in(root)
    if grid is not None:
        wanted = [grid] if isinstance(grid, str) else list(grid)
        for g in wanted:
            if g not in grids:
                known = ", ".join(grids) or "none"
                raise UserError(f"no results for grid {g!r} under {root}; grids there: {known}")
        grids = list(dict.fromkeys(wanted))
    con = duckdb.connect(":memory:")
    for view in _SOURCES:
        con.execute(f"CREATE VIEW {view} AS {_view_sql(root, grids, view)}")
    return con


def result_statuses(root: Path, grid: str) -> dict[str, str]:
    """run_id -> status of every result row of ``grid`` (newest row per run)."""
    return {k: v[0] for k, v in newest_values(root, grid, ["status"]).items()}


def newest_values(
    root: Path, grid: str, columns: list[str], run_id: str | None = None
) -> dict[str, tuple[Any, ...]]:
    """run_id -> values of ``columns`` in the newest row of each run of ``grid``, from per-run
    and consolidated files alike (the rows the ``runs`` view shows).

    Args:
        root: the results root.
        grid: the grid's name.
        columns: row columns to return (e.g. ``["status", "job_id"]``).
        run_id: only this run (an empty dict when it has no row).
    """
    globs = _globs(root, [grid], "runs")
    if not globs:
        return {}
    values = ", ".join(f'arg_max("{c}", created_at)' for c in columns)
    where = "WHERE run_id = $run_id" if run_id is not None else ""
    con = duckdb.connect(":memory:")
    rows = con.execute(
        f"SELECT run_id, {values} FROM read_parquet({sql_list(globs)}, union_by_name = true) "
        f"{where} GROUP BY run_id",
        {"run_id": run_id} if run_id is not None else None,
    ).fetchall()
    return {r[0]: tuple(r[1:]) for r in rows}
