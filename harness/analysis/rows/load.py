"""The analysis layer's only door to the database: resolve GRIDs, scale and --where, run SQL.

A selection reads one grid, several (arms compared across grids: the ``grid`` column tells them
apart, e.g. ``--a grid=sgd_embeddings``), or every grid under the results root.

Scale policy: results may hold ``full`` and ``local`` (``--local``) runs. A command uses the
scale asked for; without ``--scale`` it uses the only scale present, and refuses to mix them
when both are (a laptop-scale perplexity is not comparable with a full-scale one).
"""

from __future__ import annotations

import warnings
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from harness.analysis.rows import frames, queries
from harness.analysis.rows.gridref import resolve_grid
from harness.core import paths
from harness.core.config import SCALES
from harness.core.errors import UserError
from harness.store import db
from harness.store.confine import only_predicate


@dataclass(frozen=True, slots=True)
class Missing:
    """Planned runs without a result (:meth:`Selection.missing`)."""

    planned: int
    """Runs of the plan (the manifest) the selection covers."""
    missing: int
    """Of them, runs with no completed or diverged row (never run, running, or failed)."""
    where_applied: bool
    """Whether ``--where`` could restrict the plan (False: it names a column the manifest
    lacks, and the whole plan counts)."""

    def notes(self) -> list[str]:
        """One line when a planned run is missing, else none."""
        if not self.missing:
            return []
        whole = "" if self.where_applied else " (the whole plan: --where names a result column)"
        return [
            f"{self.missing} of {self.planned} planned runs have no result yet{whole}: never "
            "run, still running, or failed (harness status); the tables cover the others only"
        ]


@dataclass(frozen=True, slots=True)
class Selection:
    """The rows a command reads: one or more grids, one scale, an optional predicate."""

    root: Path
    """The results root."""
    grids: tuple[str, ...]
    """The grid names."""
    scale: str
    """``full`` or ``local``."""
    where: str | None
    """The user's SQL predicate (None: every row)."""
    views: db.Views
    """The connection with the grids' views: ``curves`` made when a statement first reads it
    (:meth:`_con`)."""
    read: dict[str, pd.DataFrame] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """Named statement -> its rows, once read (:meth:`frame`)."""
    counted: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)
    """Named statement -> its number of rows, once counted (:meth:`count`)."""
    described: dict[str, list[str]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """Named statement -> its columns, once asked (:meth:`columns_of`: binding the ``runs``
    view's files costs 0.03 s of CPU at 100,000 runs, and a read of some columns asks twice)."""

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The connection, with the views every statement of the analysis reads but ``curves``
        (``analyze best`` reads none of it: making it reads the footer of every per-run curve
        file)."""
        return self.views.con

    def _con(self, name: str) -> duckdb.DuckDBPyConnection:
        """The connection, with the views the named statement reads made."""
        return self.views.need("curves") if name == "curves" else self.views.con

    @property
    def grid(self) -> str:
        """Name of the selection: the grid's, or ``a+b`` for several (figures go to
        ``<root>/<name>/figures/``)."""
        return "+".join(self.grids)

    def sql(self, name: str) -> str:
        """The rendered text of the named statement
        (:data:`harness.analysis.rows.queries.NAMED`)."""
        return queries.render(queries.NAMED[name], self.scale, self.where)

    def frame(self, name: str, columns: Collection[str] | None = None) -> pd.DataFrame:
        """Run the named statement; a DataFrame with NULLs as NaN/None.

        A statement is run once per selection (the views see the files of when it was made, so
        it answers the same each time): a figure command read the rows of 100,000 runs five
        times. Each caller gets its own copy (copy-on-write: a change to one is not seen by
        the others).

        ``columns``: of the statement's columns, only those (in its order; a name it lacks is
        left out), for a caller that reads no others (``analyze best`` reads about 70 of 123:
        the rows of 100,000 runs cost less to sort and convert); from the whole frame when that
        was read already."""
        if columns is not None:
            if name in self.read:
                return self.read[name][[c for c in self.read[name].columns if c in columns]]
            kept = [c for c in self.columns_of(name) if c in columns]
            key = f"{name}:{','.join(kept)}"
            if key not in self.read:
                self.read[key] = _frame(self._con(name), queries.project(self.sql(name), kept))
            return self.read[key].copy(deep=False)
        if name not in self.read:
            self.read[name] = _frame(self._con(name), self.sql(name))
        return self.read[name].copy(deep=False)

    def columns_of(self, name: str) -> list[str]:
        """The columns of the named statement, in its order (its rows not read)."""
        if name in self.read:
            return list(self.read[name].columns)
        if name not in self.described:
            got = self._con(name).execute(f"SELECT * FROM ({self.sql(name)}) LIMIT 0")
            self.described[name] = [d[0] for d in got.description]
        return list(self.described[name])

    def count(self, name: str) -> int:
        """The number of rows of the named statement, counted in DuckDB (its rows are not
        read, unless :meth:`frame` read them already)."""
        if name in self.read:
            return len(self.read[name])
        if name not in self.counted:
            sql = queries.COUNTS.get(name)
            text = queries.render(sql, self.scale, self.where) if sql else None
            text = text or f"SELECT count(*) FROM ({self.sql(name)})"
            ((n,),) = self._con(name).execute(text).fetchall()
            self.counted[name] = int(n)
        return self.counted[name]

    def curves_of(self, run_ids: Collection[str]) -> pd.DataFrame:
        """The rows of the named statement ``curves`` (same columns, same order) of
        ``run_ids`` only: the runs are chosen first, then only their points are read, in
        DuckDB (a figure of each arm's tuned configuration over 100,000 runs reads its seeds'
        points, not 20 million). Run ids the selection does not hold are ignored."""
        if "curves" in self.read:
            whole = self.frame("curves")
            return whole[whole["run_id"].isin(set(run_ids))].reset_index(drop=True)
        ids = sorted(set(map(str, run_ids)))
        sql = queries.render(queries.CURVES_OF, self.scale, self.where)
        return _frame(self._con("curves"), sql, [ids])

    def missing(self) -> Missing:
        """How many of the selection's planned runs (its grids' manifests, at its scale) have
        no completed or diverged row; the predicate applies when the manifest has its columns
        (a predicate over metrics does not: then the whole plan counts)."""
        for where, applied in ((self.where, True), (None, False)):
            try:
                got = self.con.execute(queries.render(queries.PLAN_MISSING, self.scale, where))
            except duckdb.Error:
                continue
            planned, missing = got.fetchone() or (0, 0)
            return Missing(int(planned), int(missing), applied or self.where is None)
        return Missing(0, 0, False)

    def columns(self) -> list[str]:
        """Columns of the ``runs`` view."""
        return [d[0] for d in self.con.execute(queries.COLUMNS).description]


def _frame(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[object] = ()) -> pd.DataFrame:
    """The rows of ``sql`` (with ``params``) as ``con.execute(sql, params).df()`` gives them,
    through Arrow (:mod:`harness.analysis.rows.frames`: 0.4 s of CPU less for the rows of
    100,000 runs), sorted there by the statement's ``ORDER BY`` of string or integer columns
    (:func:`~harness.analysis.rows.queries.split_order`: 0.3 s less)."""
    with warnings.catch_warnings():  # duckdb's own pandas conversion warns on pandas 3
        warnings.filterwarnings("ignore", message=".*inplace keyword.*")
        # an execute() result (the connection may hold an unfinished one: execute replaces it);
        # its "extra copy" of the rows costs no more than a relation's result here
        warnings.filterwarnings("ignore", message=".*Arrow output on a DB-API result.*")
        body, keys = queries.split_order(sql)
        table: pa.Table | None = con.execute(body, list(params)).to_arrow_table()
        if table is not None and keys:
            table = _sorted(table, keys)
        if table is None or not all(any(t(f.type) for t in frames.TYPES) for f in table.schema):
            return con.execute(sql, list(params)).df()
    return frames.as_duckdb_frame(table)


def _sorted(table: pa.Table, keys: Sequence[str]) -> pa.Table | None:
    """``table`` in the order DuckDB's ``ORDER BY keys`` gives (ascending, NULLs last; strings
    by their bytes, as DuckDB compares them; equal keys in the order the rows came, which
    DuckDB leaves open); None where a key is no string or integer column of it."""
    names = set(table.column_names)
    if not all(k in names and _sortable(table.schema.field(k).type) for k in keys):
        return None
    order = pc.sort_indices(table, sort_keys=[(k, "ascending") for k in keys])
    return table.take(order)


def _sortable(kind: pa.DataType) -> bool:
    return bool(pa.types.is_string(kind) or pa.types.is_integer(kind))


def views(
    grid: str | Sequence[str] | None, *, results: str | Path | None = None
) -> duckdb.DuckDBPyConnection:
    """A connection with the views ``runs``, ``curves``, ``manifest`` and ``evals`` over the
    results of ``grid`` (a YAML path or name, several, or None: every grid), as ``harness query``
    reads them; for a user's own SQL (:func:`harness.api.connect`)."""
    root = paths.results_root(results)
    args = [grid] if isinstance(grid, str) else list(grid or [])
    names = [resolve_grid(g) for g in args]
    return db.connect(root, names or None)


RUNS_VIEWS = tuple(v for v in db.VIEWS if v != "curves")
"""The views a selection makes when it opens (``curves``: when a statement reads it)."""


def select(
    grid: str | Sequence[str] | None,
    *,
    results: str | Path | None = None,
    scale: str | None = None,
    where: str | None = None,
) -> Selection:
    """Open the results of one or more grids and validate the scale and the predicate.

    Args:
        grid: a grid YAML path or a grid name, a sequence of them, or None (empty): every grid
            under the results root.
        results: the results root (None: ``$HARNESS_RESULTS`` or ``./results``).
        scale: ``full``, ``local`` or None (the only scale present).
        where: an SQL predicate over the columns of ``runs``.

    Raises:
        UserError: unknown grid, scale not present or ambiguous, a bad or empty ``where``.
    """
    root = paths.results_root(results)
    args = [grid] if isinstance(grid, str) else list(grid or [])
    names = tuple(dict.fromkeys(resolve_grid(g) for g in args)) or tuple(paths.grids_in(root))
    if not names:
        raise UserError(f"no results under {root}")
    name = "+".join(names)
    views = db.open_views(root, list(names), views=RUNS_VIEWS)
    con = views.con
    present = dict(con.execute(queries.SCALES_PRESENT).fetchall())
    chosen = _scale(present, name, scale)
    where = where.strip() if where and where.strip() else None
    if where is None:  # every row of the scale: counted already (a scan of 100,000 rows less)
        n = present[chosen]
    else:
        only_predicate(where)
        try:
            (n,) = con.execute(queries.render(queries.COUNT, chosen, where)).fetchone()  # type: ignore[misc]  # COUNT(*): one row
        except duckdb.Error as e:
            raise UserError(f"--where {where!r}: {db.error_text(e)}") from None
    if n == 0:
        raise UserError(f"--where {where!r} matches no runs of grid {name!r} (scale {chosen})")
    return Selection(root=root, grids=names, scale=chosen, where=where, views=views)


@dataclass(frozen=True, slots=True)
class BestOfArm:
    """The best completed run of one optimizer so far (``harness watch``)."""

    optimizer: str
    """The optimizer, as its rows name it."""
    run_id: str
    """Its best run."""
    lr: float | None
    """That run's learning rate."""
    val_loss: float
    """That run's validation loss."""
    searched_lrs: tuple[float, ...]
    """The learning rates the grid's manifest plans for the optimizer."""


@dataclass(frozen=True, slots=True)
class Progress:
    """What a grid's rows and live curves say so far, at every scale (``harness watch``)."""

    used_s: float
    """Wall seconds of the rows written, plus the elapsed seconds of the runs training now."""
    on_gpu: bool
    """Whether any row was trained on a GPU."""
    best: tuple[BestOfArm, ...]
    """The best completed run per optimizer, best first."""
    leaders: tuple[tuple[str, tuple[float, ...]], ...]
    """(run_id, training losses in step order) of the runs lowest at their last point."""


def progress(root: Path, grid: str, leaders: int) -> Progress:
    """``grid``'s progress under ``root``: rows, manifest and live curves (``leaders`` runs)."""
    con = db.connect(root, grid)
    used_s, gpu = con.execute(queries.PROGRESS_USED).fetchone() or (0.0, False)
    (running_s,) = con.execute(queries.PROGRESS_RUNNING).fetchone() or (0.0,)
    best = tuple(
        BestOfArm(opt, run_id, lr, float(val), tuple(lrs))
        for opt, run_id, lr, val, lrs in con.execute(queries.PROGRESS_BEST).fetchall()
    )
    lead = con.execute(queries.PROGRESS_LEADERS.format(limit=int(leaders))).fetchall()
    return Progress(
        used_s=float(used_s) + float(running_s),
        on_gpu=bool(gpu),
        best=best,
        leaders=tuple((r, tuple(float(x) for x in losses)) for r, losses in lead),
    )


def _scale(runs: dict[str, int], grid: str, scale: str | None) -> str:
    """The scale to read, of the scales ``runs`` holds (scale -> rows: the grid's)."""
    present = list(runs)
    if scale is not None and scale not in SCALES:
        raise UserError(f"unknown --scale {scale!r}; valid choices: {', '.join(SCALES)}")
    if not present:
        raise UserError(f"grid {grid!r} has no results yet")
    if scale is None:
        if len(present) > 1:
            raise UserError(
                f"grid {grid!r} has results at scales {' and '.join(map(str, present))}; "
                "pick one with --scale full|local"
            )
        return str(present[0])
    if scale not in present:
        raise UserError(
            f"grid {grid!r} has no {scale}-scale results; scales present: {', '.join(present)}"
        )
    return scale
