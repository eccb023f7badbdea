"""DuckDB over the results folder: SQL views ``runs``, ``curves``, ``manifest`` and ``evals``
(downstream scores, :mod:`harness.store.evals`; they join ``runs`` by ``run_id``).

Views read the Parquet files directly, so a query always sees every row written so far: the
per-run files of running grids and the consolidated files of ``harness compact`` alike. A run
that appears more than once (a retried run whose old row was consolidated, or a compaction
stopped between writing its file and removing what it covered) shows its newest row in ``runs``;
in ``curves`` it shows the points of its per-run curve file when there is one, else those of the
newest consolidated generation that holds it (see :func:`curves_select`). ``curves`` also shows
the points logged so far by runs being trained (live files, :mod:`harness.store.live`), with
``running`` true while a process trains them; stored points have ``running`` false.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from harness.core import paths
from harness.core.errors import UserError
from harness.core.paths import duck_path
from harness.core.provenance import ATTEMPT
from harness.store.confine import Confinement, confine
from harness.store.evals import EVAL_SCHEMA
from harness.store.integrity import check_grid
from harness.store.live import curve_rows
from harness.store.schema import CURVE_SCHEMA, NEWEST_KEY, config_schema, row_schema

Sources = list[tuple[Path, str]]
"""(folder, file name or glob) pairs: one grid's files behind a view (:mod:`harness.core.paths`)."""


def _compacted(per_run: Callable[[Path, str], Path], kind: str) -> Callable[[Path, str], Sources]:
    def sources(root: Path, grid: str) -> Sources:
        return [
            (per_run(root, grid), paths.PER_RUN_FILES),
            (paths.compact_dir(root, grid), paths.generation_glob(kind)),
        ]

    return sources


def _manifest(root: Path, grid: str) -> Sources:
    path = paths.manifest_path(root, grid)
    return [(path.parent, path.name)]


_SOURCES: dict[str, Callable[[Path, str], Sources]] = {
    "runs": _compacted(paths.runs_dir, "runs"),
    "curves": _compacted(paths.curves_dir, "curves"),
    "manifest": _manifest,
    "evals": lambda root, grid: [(paths.evals_dir(root, grid), paths.PER_RUN_FILES)],
}
"""View name -> the files of one grid it reads."""


def files_sql(folder: Path, pattern: str) -> list[str]:
    """What DuckDB reads for the files of ``folder`` matching ``pattern`` (a plain ``*.parquet``
    or a file name): the escaped folder joined to the pattern, read afresh by every query; the
    files themselves when the folder's path holds a backslash; nothing when none match."""
    if not any(folder.glob(pattern)):
        return []
    if "\\" in str(folder):
        return [duck_path(p) for p in sorted(folder.glob(pattern))]
    return [f"{duck_path(folder)}/{pattern}"]


def _globs(root: Path, grids: list[str], view: str) -> list[str]:
    out = []
    for g in grids:
        for folder, pattern in _SOURCES[view](root, g):
            out += files_sql(folder, pattern)
    return out


def _empty_select(view: str) -> str:
    schema = {"runs": row_schema(), "curves": CURVE_SCHEMA, "manifest": config_schema(),
              "evals": EVAL_SCHEMA}[view]  # fmt: skip
    cols = ", ".join(f'CAST(NULL AS {_sql_type(f.type)}) AS "{f.name}"' for f in schema)
    return f"SELECT {cols} WHERE false"


def _sql_type(t: object) -> str:
    s = str(t)
    return {"int64": "BIGINT", "double": "DOUBLE", "string": "VARCHAR", "bool": "BOOLEAN"}.get(
        s, "TIMESTAMPTZ"
    )


#: Lines of a DuckDB error that help the user fix the SQL (kept after the first line).
_HINTS = ("did you mean", "candidate bindings", "candidate tables", "hint")


def error_text(e: BaseException) -> str:
    """A DuckDB error in at most two lines: its first line, then its hints (``Did you mean
    "runs"?``, ``Candidate bindings: "val_ppl"``) joined on a second line."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    if not lines:
        return type(e).__name__
    hints = [ln for ln in lines[1:] if ln.lower().startswith(_HINTS)]
    return "\n".join([lines[0], *(["  " + " ".join(hints)] if hints else [])])


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
        per_run: the grid's per-run curve files: a glob (its folder escaped, :func:`duck_path`),
            an explicit list of paths, or None (none).
        compacted: the grid's ``compact/curves-<gen>.parquet`` files (zero-padded generations).
    """
    parts = []
    if per_run:
        parts.append(f"SELECT * FROM read_parquet({_files_sql(per_run)}, union_by_name = true)")
    if compacted:
        escaped = [duck_path(p) for p in compacted]
        src = f"read_parquet({sql_list(escaped)}, union_by_name = true, filename = true)"
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
    return sql_string(files) if isinstance(files, str) else sql_list([duck_path(f) for f in files])


def _curves_sql(root: Path, grids: list[str]) -> str:
    """The ``curves`` view: one plain scan over the grids whose points live in one place (only
    per-run files, or one consolidated generation), a deduplicating SELECT for the others."""
    plain: list[str] = []
    mixed: list[str] = []
    for g in grids:
        per_run = _one_source(files_sql(paths.curves_dir(root, g), paths.PER_RUN_FILES))
        compacted = [str(p) for p in paths.generations(root, g, "curves")]
        if per_run and not compacted:
            plain += [per_run] if isinstance(per_run, str) else [duck_path(p) for p in per_run]
        elif compacted and not per_run and len(compacted) == 1:
            plain.append(duck_path(compacted[0]))
        elif per_run or compacted:
            mixed.append(curves_select(per_run, compacted))
    if plain:
        mixed.insert(0, f"SELECT * FROM read_parquet({sql_list(plain)}, union_by_name = true)")
    if not mixed:
        return _empty_select("curves")
    return " UNION ALL BY NAME ".join(f"({p})" for p in mixed)


def _one_source(sources: list[str]) -> str | list[str] | None:
    """:func:`files_sql`'s answer as :func:`curves_select` takes it: one glob, or a list of
    (unescaped) files."""
    if not sources:
        return None
    if len(sources) == 1 and sources[0].endswith("/" + paths.PER_RUN_FILES):
        return sources[0]
    return sources  # listed files: a backslash in the path, so no glob character to escape


def _view_sql(root: Path, grids: list[str], view: str) -> str:
    if view == "curves":
        return _curves_sql(root, grids)
    globs = _globs(root, grids, view)
    if not globs:
        return _empty_select(view)
    src = f"read_parquet({sql_list(globs)}, union_by_name = true)"
    if view == "runs":
        return (
            f"SELECT * FROM {with_attempt(src)} QUALIFY row_number() OVER "
            f"(PARTITION BY grid, run_id ORDER BY {NEWEST_KEY} DESC) = 1"
        )
    return f"SELECT * FROM {src}"


def with_attempt(src: str) -> str:
    """The rows of the SQL source ``src`` with an ``attempt`` column even where no file has one
    (rows written before attempts were recorded: NULL)."""
    none = f"SELECT CAST(NULL AS BIGINT) AS {ATTEMPT} WHERE false"
    return f"(SELECT * FROM {src} UNION ALL BY NAME {none})"


def connect(
    root: Path, grid: str | Sequence[str] | None = None, *,
    confinement: Confinement | None = None, writable: tuple[Path, ...] = (),
) -> duckdb.DuckDBPyConnection:  # fmt: skip
    """An in-memory DuckDB connection with views over the results under ``root``, confined to
    reading them (:mod:`harness.store.confine`).

    Args:
        root: the results root.
        grid: restrict the views to one grid (a name) or to several (a sequence of names);
            None: every grid under ``root``.
        confinement: what its SQL may do (None: :meth:`Confinement.from_env`).
        writable: files the caller writes through the connection (``query -o x.parquet``).

    Corrupt files of those grids are moved aside first (:mod:`harness.store.integrity`).

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
    for g in grids:
        check_grid(root, g)
    con = duckdb.connect(":memory:")
    for view in _SOURCES:
        sql = _view_sql(root, grids, view)
        if view == "curves":
            sql = _with_live_points(con, root, grids, sql)
        con.execute(f"CREATE VIEW {view} AS {sql}")
    confine(con, root, confinement or Confinement.from_env(), writable)
    return con


def _with_live_points(con: duckdb.DuckDBPyConnection, root: Path, grids: list[str],
                      stored: str) -> str:  # fmt: skip
    """The ``curves`` view with a ``running`` column: the stored points (``false``), and the
    points of runs with a live file (:mod:`harness.store.live`; ``true`` while a process holds
    the run's lock), which replace a run's stored points (an older attempt's)."""
    rows = curve_rows(root, grids)
    marked = f"SELECT *, false AS running FROM ({stored})"
    if not rows:
        return marked
    schema = CURVE_SCHEMA.append(pa.field("running", pa.bool_()))
    con.register("_live_points", pa.Table.from_pylist(rows, schema=schema))
    return (
        f"SELECT * FROM ({marked}) s WHERE NOT EXISTS (SELECT 1 FROM _live_points l "
        "WHERE l.grid = s.grid AND l.run_id = s.run_id) UNION ALL BY NAME "
        "SELECT * FROM _live_points"
    )


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
        columns: row columns to return (e.g. ``["status", "job_id"]``); a column no row has
            (one added after the rows were written) is None.
        run_id: only this run (an empty dict when it has no row).

    A read that fails moves the grid's corrupt files aside and is tried once more.
    """
    return _newest(root, grid, [f'"{c}"' for c in columns], run_id)


def newest_time_us(root: Path, grid: str, run_id: str) -> int | None:
    """Microseconds since the epoch of the newest row of ``run_id`` (None when it has none):
    an integer, so that no time-zone module is needed to read it."""
    found = _newest(root, grid, ["epoch_us(created_at)"], run_id).get(run_id)
    return None if found is None else int(found[0])


def _newest(
    root: Path, grid: str, values: list[str], run_id: str | None
) -> dict[str, tuple[Any, ...]]:
    """The SQL ``values`` of the newest row of each run (see :func:`newest_values`)."""
    try:
        return _query_newest(root, grid, values, run_id)
    except duckdb.Error:
        if not check_grid(root, grid):
            raise
    return _query_newest(root, grid, values, run_id)


def _query_newest(
    root: Path, grid: str, values: list[str], run_id: str | None
) -> dict[str, tuple[Any, ...]]:
    globs = _globs(root, [grid], "runs")
    if not globs:
        return {}
    con = duckdb.connect(":memory:")
    src = with_attempt(f"read_parquet({sql_list(globs)}, union_by_name = true)")
    where = "WHERE run_id = $run_id" if run_id is not None else ""
    params = {"run_id": run_id} if run_id is not None else None

    def newest(present: set[str] | None) -> list[tuple[Any, ...]]:
        select = ", ".join(  # a column no file has (added after the rows were written): NULL
            "NULL"
            if present is not None and v.startswith('"') and v not in present
            else f"arg_max({v}, {NEWEST_KEY})"
            for v in values
        )
        sql = f"SELECT run_id, {select} FROM {src} {where} GROUP BY run_id"
        return con.execute(sql, params).fetchall()

    try:  # the files are read once, unless a column is missing from all of them
        rows = newest(None)
    except duckdb.BinderException:
        present = {f'"{d[0]}"' for d in con.execute(f"SELECT * FROM {src} LIMIT 0").description}
        rows = newest(present)
    return {r[0]: tuple(r[1:]) for r in rows}
