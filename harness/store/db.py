"""DuckDB over the results folder: SQL views ``runs``, ``curves``, ``manifest`` and ``evals``
(downstream scores, :mod:`harness.store.evals`; they join ``runs`` by ``run_id``).

``runs`` and ``curves`` read the Parquet files that hold the grid's results when the connection
is made (:func:`harness.store.layout.grid_files`: the newest complete generation and the per-run
files it does not cover); every file is written once and never replaced, and a file a compaction
covers stays :data:`harness.store.layout.GRACE_S` seconds after, so no query meets a file half
replaced or gone. Connect again to see rows written since. A run that appears more than once (a
retried run, a per-run file beside a generation that holds it) shows its newest row in ``runs``;
in ``curves`` it shows the points of its newest per-run curve file when there is one, else those
of the generation (see :func:`curves_select`). ``curves`` also shows
the points logged so far by runs being trained (live files, :mod:`harness.store.live`), with
``running`` true while a process trains them; stored points have ``running`` false.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from harness.core import paths
from harness.core.errors import UserError
from harness.core.paths import duck_path
from harness.core.provenance import ATTEMPT
from harness.core.result import RESULT_STATUSES
from harness.store.confine import Confinement, confine
from harness.store.integrity import check_grid
from harness.store.layout import GridFiles, grid_files
from harness.store.live import curve_rows
from harness.store.loose_cache import rows as kept_rows
from harness.store.schema import CURVE_SCHEMA, EVAL_SCHEMA, NEWEST_KEY, config_schema, row_schema

Sources = list[tuple[Path, str]]
"""(folder, file name or glob) pairs: one grid's files behind a view (:mod:`harness.core.paths`)."""


def _manifest(root: Path, grid: str) -> Sources:
    path = paths.manifest_path(root, grid)
    return [(path.parent, path.name)]


_SOURCES: dict[str, Callable[[Path, str], Sources]] = {
    "manifest": _manifest,
    "evals": lambda root, grid: [(paths.evals_dir(root, grid), paths.PER_RUN_FILES)],
}
"""View name -> the files of one grid it reads (``runs`` and ``curves``: :func:`_runs_sql`,
:func:`_curves_sql`)."""

VIEWS = ("runs", "curves", "manifest", "evals")
"""The views of :func:`connect`."""


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
    schema = {
        "runs": row_schema(),
        "curves": CURVE_SCHEMA,
        "manifest": config_schema(),
        "evals": EVAL_SCHEMA,
    }[view]
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


def curves_select(
    per_run: Sequence[Path], parts: Sequence[tuple[Path, frozenset[str]]] = ()
) -> str:
    """SELECT of one grid's curve points from per-run files and a generation's curve parts
    (oldest first, each with the runs whose points in older parts it supersedes).

    A run's points come from its per-run file when one is given (the newest version of its
    file, :func:`harness.store.layout.grid_files`), else from the newest part that holds them,
    so a run present in several places is never counted twice.
    """
    out = []
    if per_run:
        out.append(f"SELECT * FROM read_parquet({_paths_sql(per_run)}, union_by_name = true)")
    hidden = {paths.per_run_name(p)[0] for p in per_run}
    for path, shadows in reversed(parts):  # newest first: what it holds hides older parts'
        sql = f"SELECT * FROM read_parquet({_paths_sql([path])})"
        if hidden:
            sql += f" WHERE run_id NOT IN (SELECT unnest({sql_list(sorted(hidden))}))"
        out.append(sql)
        hidden |= shadows
    if not out:
        return _empty_select("curves")
    return " UNION ALL BY NAME ".join(f"({p})" for p in out)


def _paths_sql(files: Sequence[Path]) -> str:
    return sql_list([duck_path(f) for f in files])


def _curves_sql(found: Sequence[GridFiles]) -> str:
    """The ``curves`` view over the files readers read now of some grids: each run's points
    from one place (:func:`curves_select`)."""
    parts = [curves_select(f.curves, f.curve_parts) for f in found if f.curves or f.curve_parts]
    if not parts:
        return _empty_select("curves")
    return " UNION ALL BY NAME ".join(f"({p})" for p in parts)


LOOSE_ROWS = "_loose_rows"
"""The table of a :func:`connect` connection holding the rows of the per-run files it reads."""
SEVERAL = "_runs_with_several_rows"
"""The table of a :func:`connect` connection naming the runs (grid, run_id) with several rows."""


def _runs_sql(con: duckdb.DuckDBPyConnection, found: Sequence[GridFiles]) -> str:
    """The ``runs`` view of ``con`` over the row files of ``found``: :func:`newest_rows_sql`,
    with what every query over it would redo done once, here.

    - The per-run files' rows are read once, into an Arrow table (:data:`LOOSE_ROWS`,
      :func:`_read_rows`): a query over a few hundred one-row files (the runs written since
      the last compaction) paid 1 to 3 ms of CPU per file for their footers and column set-up,
      each time (0.3 to 0.8 s per query with 255 of them beside 99,000 compacted rows, three or
      more queries per command). The table is kept for the next reader while the files are
      as they were (:mod:`harness.store.loose_cache`).
    - The runs with several rows are found once (:data:`SEVERAL`): where there is none (a store
      whose runs each ran once), the view is the rows as they are, with no pass to pick the
      newest row of a run.

    The sources keep the order of :attr:`GridFiles.all_rows` (each grid's per-run files, then
    its parts), so the view has its columns in the files' order, as when it read the files."""
    sources = []
    for i, f in enumerate(found):
        if f.rows:
            table = f"{LOOSE_ROWS}_{i}"
            con.register(table, kept_rows(f.rows, _read_rows))
            sources.append(f"SELECT * FROM {table}")
        parts = f.generation.runs if f.generation else ()
        if parts:
            sources.append(f"SELECT * FROM read_parquet({_paths_sql(parts)}, union_by_name = true)")
    if not sources:
        return _empty_select("runs")
    src = " UNION ALL BY NAME ".join(f"({s})" for s in sources)
    try:
        con.execute(
            f"CREATE TEMP TABLE {SEVERAL} AS SELECT grid, run_id FROM {with_attempt(f'({src})')} "
            "GROUP BY grid, run_id HAVING count(*) > 1"
        )
    except duckdb.OutOfMemoryException:  # a memory limit below DuckDB's hash table (2 MiB):
        return newest_rows_sql(f"({src})")  # found in each query, which the limit refuses alone
    ((several,),) = con.execute(f"SELECT count(*) FROM {SEVERAL}").fetchall()
    if not several:
        return f"SELECT * FROM {with_attempt(f'({src})')}"
    return newest_rows_sql(f"({src})", several=SEVERAL)


def _read_rows(files: Sequence[Path]) -> pa.Table:
    """The rows of the per-run row files ``files``, read by a connection of one thread: many
    small files read by several threads cost about twice the CPU (0.9 against 1.7 s for 255
    files of 123 columns, load 9), the threads waiting on each other file by file; each file's
    footer parsed once (0.9 against 1.1 s)."""
    src = f"read_parquet({_paths_sql(files)}, union_by_name = true)"
    with duckdb.connect(":memory:", config={"threads": 1}) as one:
        # each footer parsed once, where the schemas' union and the scan each parsed it
        with contextlib.suppress(duckdb.Error):
            one.execute("SET parquet_metadata_cache = true")
        # no progress bar: a read slower than DuckDB's 2 s wait (a loaded machine) drew one; in
        # Jupyter without ipywidgets DuckDB refuses the setting itself (store/confine.py)
        with contextlib.suppress(duckdb.Error):
            one.execute("SET enable_progress_bar = false")
        return one.sql(f"SELECT * FROM {src}").to_arrow_table()


def newest_rows_sql(src: str, several: str | None = None) -> str:
    """The newest row of each run (by :data:`~harness.store.schema.NEWEST_KEY`) among the rows
    of the SQL source ``src`` (``several``: a table naming the runs with more than one row
    there, by ``grid`` and ``run_id``; None: found by the statement).

    Only the runs with more than one row go through the window that picks the newest: the
    others (nearly all, once compacted) pass as they are, so a query over 100,000 runs does not
    sort every row of every column (0.5 s of CPU per query at that size)."""
    found = several or "SELECT grid, run_id FROM src GROUP BY grid, run_id HAVING count(*) > 1"
    newest = (
        "SELECT * FROM src SEMI JOIN several USING (grid, run_id) QUALIFY row_number() OVER "
        f"(PARTITION BY grid, run_id ORDER BY {NEWEST_KEY} DESC) = 1"
    )
    return (
        f"WITH src AS (SELECT * FROM {with_attempt(src)}), several AS "
        f"({'SELECT * FROM ' + found if several else found}) "
        f"SELECT * FROM src ANTI JOIN several USING (grid, run_id) "
        f"UNION ALL BY NAME ({newest})"
    )


def _view_sql(root: Path, grids: list[str], view: str) -> str:
    globs = _globs(root, grids, view)
    if not globs:
        return _empty_select(view)
    return f"SELECT * FROM read_parquet({sql_list(globs)}, union_by_name = true)"


def with_attempt(src: str) -> str:
    """The rows of the SQL source ``src`` with an ``attempt`` column even where no file has one
    (rows written before attempts were recorded: NULL)."""
    none = f"SELECT CAST(NULL AS BIGINT) AS {ATTEMPT} WHERE false"
    return f"(SELECT * FROM {src} UNION ALL BY NAME {none})"


def connect(
    root: Path,
    grid: str | Sequence[str] | None = None,
    *,
    confinement: Confinement | None = None,
    writable: tuple[Path, ...] = (),
) -> duckdb.DuckDBPyConnection:
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
    return open_views(root, grid, confinement=confinement, writable=writable).con


@dataclass(frozen=True, slots=True)
class Views:
    """A connection of :func:`open_views` and the views it made so far: a view is made when
    :meth:`need` first asks for it, over the files found when the connection was made (as
    every view of the connection: one listing of the results folder)."""

    con: duckdb.DuckDBPyConnection
    """The connection (confined)."""
    root: Path
    """The results root."""
    grids: tuple[str, ...]
    """The grids the views read."""
    found: tuple[GridFiles, ...]
    """Each grid's files, as listed when the connection was made."""
    made: set[str] = field(default_factory=set)
    """The views made so far (the views of :data:`VIEWS` are made in its order: ``curves``
    reads ``runs``)."""

    def need(self, *views: str) -> duckdb.DuckDBPyConnection:
        """The connection, with ``views`` (names of :data:`VIEWS`) made."""
        for view in VIEWS:
            if view in views and view not in self.made:
                if view == "curves":
                    self.need("runs")
                self.con.execute(f"CREATE VIEW {view} AS {self._sql(view)}")
                self.made.add(view)
        return self.con

    def _sql(self, view: str) -> str:
        grids = list(self.grids)
        if view == "runs":
            return _runs_sql(self.con, self.found)
        if view == "curves":
            return _with_live_points(self.con, self.root, grids, _curves_sql(self.found))
        return _view_sql(self.root, grids, view)


def open_views(
    root: Path,
    grid: str | Sequence[str] | None = None,
    *,
    confinement: Confinement | None = None,
    writable: tuple[Path, ...] = (),
    views: Collection[str] = VIEWS,
) -> Views:
    """:func:`connect`, with only ``views`` made now; the others when :meth:`Views.need` asks
    for them. Making ``curves`` reads the footer of every per-run curve file (0.1 s of CPU for
    255 beside 100,000 compacted runs): a command that reads only ``runs`` does not pay it."""
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
    found = tuple(grid_files(root, g) for g in grids)
    con = duckdb.connect(":memory:")
    # every file name or pattern the views read, as DuckDB reads it (those made later too)
    spelled = [s for view in VIEWS for s in _spelled(root, grids, found, view)]
    readable = tuple(spelled) if duck_path(root) != str(root) else ()
    # confined first: what the views' making reads (the per-run rows, :func:`_runs_sql`) is
    # read under the same memory limit, and draws no progress bar
    confine(con, root, confinement or Confinement.from_env(), writable, readable)
    made = Views(con, root, tuple(grids), found)
    made.need(*views)
    return made


def _spelled(root: Path, grids: list[str], found: Sequence[GridFiles], view: str) -> list[str]:
    """The names (or patterns) of the files ``view`` reads, as its SQL spells them."""
    if view == "runs":
        return [duck_path(p) for f in found for p in f.all_rows]
    if view == "curves":
        parts = [p for f in found for p, _ in f.curve_parts]  # a generation's curve parts
        return [duck_path(p) for p in (*(c for f in found for c in f.curves), *parts)]
    return _globs(root, grids, view)


def _with_live_points(
    con: duckdb.DuckDBPyConnection, root: Path, grids: list[str], stored: str
) -> str:
    """The ``curves`` view with a ``running`` column: the stored points (``false``), and the
    points of runs with a live file (:mod:`harness.store.live`; ``true`` while a process holds
    the run's lock), which replace a run's stored points (an older attempt's), unless the file
    is stale: no process holds the run's lock and the run has a result (a finished run is not
    trained again; its stored curve is the one)."""
    rows = curve_rows(root, grids)
    marked = f"SELECT *, false AS running FROM ({stored})"
    if not rows:
        return marked
    schema = CURVE_SCHEMA.append(pa.field("running", pa.bool_()))
    con.register("_live_points", pa.Table.from_pylist(rows, schema=schema))
    finished = sql_list(sorted(RESULT_STATUSES))
    fresh = (
        "SELECT * FROM _live_points l WHERE l.running OR NOT EXISTS (SELECT 1 FROM runs r "
        f"WHERE r.grid = l.grid AND r.run_id = l.run_id AND r.status IN {finished_set(finished)})"
    )
    return (
        f"SELECT * FROM ({marked}) s WHERE NOT EXISTS (SELECT 1 FROM ({fresh}) l "
        f"WHERE l.grid = s.grid AND l.run_id = s.run_id) UNION ALL BY NAME {fresh}"
    )


def finished_set(statuses: str) -> str:
    """``(SELECT unnest([...]))``: a SQL list literal as a set to test ``IN``."""
    return f"(SELECT unnest({statuses}))"


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


def runs_with_result(root: Path, grid: str) -> set[str]:
    """The runs of ``grid`` that have, or had, a result: any row of theirs (not only the newest)
    ``completed`` or ``diverged``. A read that fails moves the grid's corrupt files aside and is
    tried once more."""
    statuses = sql_list(sorted(RESULT_STATUSES))

    def query() -> set[str]:
        files = grid_files(root, grid).all_rows
        if not files:
            return set()
        src = f"read_parquet({_paths_sql(files)}, union_by_name = true)"
        sql = f"SELECT DISTINCT run_id FROM {src} WHERE status IN (SELECT unnest({statuses}))"
        return {r for (r,) in duckdb.connect(":memory:").execute(sql).fetchall()}

    try:
        return query()
    except duckdb.Error:
        if not check_grid(root, grid):
            raise
    return query()


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
    files = grid_files(root, grid).all_rows
    if not files:
        return {}
    con = duckdb.connect(":memory:")
    src = with_attempt(f"read_parquet({_paths_sql(files)}, union_by_name = true)")
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
