"""Consolidate a grid's per-run result files into larger Parquet files (``harness compact``,
and by itself once enough per-run files have arrived: :func:`harness.store.auto.auto_compact`).

Thousands of runs leave thousands of one-row files ``runs/<run_id>.<version>.parquet`` and loss
curves ``curves/<run_id>.<version>.parquet``; a query over them pays one file open each.
Compaction merges them into a new *generation*: a list of *parts*, oldest first, each a pair of
files written by the compaction of its number::

    <grid>/compact/runs-<n>.parquet     the result rows of part n (sorted by run_id)
    <grid>/compact/curves-<n>.parquet   per run, the curve points part n holds
    <grid>/compact/covered-<gen>.json   the per-run files generation <gen> holds and its parts
                                        (numbers, rows, the runs each supersedes): written
                                        last, it completes the generation

Each compaction writes one new part: the per-run files not yet covered, merged with the
current generation's parts that it merges (``harness compact``: all of them, leaving one part;
a writer's compaction by itself: those that size tiers call for, :mod:`harness.store.tiers`,
so that a row is rewritten a few times in all rather than once per compaction); the others are
kept as they are. A generation written by an earlier harness (a covered list without parts) is
one part.

Nothing is lost and nothing is seen twice, wherever it stops, and no reader meets a file
removed under it (:mod:`harness.store.layout`):

1. Under an exclusive lock (one compaction per grid at a time) the current generation and the
   per-run files it does not cover are listed: the snapshot.
2. The new part is written under temporary names and renamed into place, then the covered list
   (every per-run file present at the snapshot, and the parts). Until the list exists readers
   ignore the part; a crash before leaves files the next compaction removes.
3. The files that compactions covered long enough ago (:data:`harness.store.layout.GRACE_S`),
   and the parts no generation read since then holds, are removed; so are the lock files of
   the runs it consolidated that no process holds (:mod:`harness.store.tidy`).

Per-run files are never replaced (:mod:`harness.store.rows`), so a file in the snapshot holds
what was read. Runs that finish during a compaction keep their per-run files and are
consolidated by the next one.

**When it happens by itself.** Every writer of a result row (:func:`harness.store.spill.
write_or_spill`: the process that trained the run, or that recorded how it ended) counts it
(:func:`harness.store.auto.arrive`: one byte appended, no listing); at
:data:`~harness.store.auto.AUTO_COMPACT_FILES` rows the current generation does not hold it
compacts the grid by tiers unless another process is compacting it (the lock is tried, never
waited for). So a store holds at most about that many loose row files however many runs arrive,
readers pay for at most that many and a few parts, and nobody has to remember ``harness
compact``. A compaction reads the files it merges once and streams them (DuckDB with a memory
limit), so its memory is bounded by :data:`MEMORY_LIMIT`, not by the data.

Rows: every distinct row is kept (an older row of a retried run too; the ``runs`` view shows the
newest), only exact copies collapse into one; columns are the union of the files' columns, types
unchanged. Curves: the new part holds, per run, the points the view showed from what it merges
(its newest per-run curve, else the newest merged part's); a run whose curve in a kept part it
supersedes (a retry) is listed with it, and readers take each run's points from the newest part.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from harness.core import paths
from harness.core.files import atomic_write, locked, try_locked
from harness.store import written
from harness.store.arrivals import count_arrivals
from harness.store.db import curves_select, sql_list
from harness.store.integrity import Checked, check_grid
from harness.store.layout import (
    Generation,
    Part,
    current_generation,
    loose_names,
    newest_per_run,
    remove_due,
    require_grid,
    uncovered,
    write_covered,
)
from harness.store.tidy import remove_locks
from harness.store.tiers import merge_from

MEMORY_LIMIT = "512MB"
"""DuckDB's memory limit while a compaction reads and writes (it spills to disk beyond)."""

ROW_GROUP_SIZE = 131_072
"""Rows per Parquet row group of a generation file (a run's points are contiguous, so a query for
a few runs reads a few row groups; the integrity check reads one at a time)."""

RUNS_ROW_GROUP_SIZE = 2048
"""Rows per row group of a part's result rows, sorted by run_id: the row groups' run_id
statistics let a read of a few runs' rows (:func:`harness.store.rows.newest_rows`) skip the
others' row groups."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What one compaction covers."""

    grid: str
    """The grid's name."""
    root: Path
    """The results root holding it."""
    base: Generation | None
    """The current generation (:func:`harness.store.layout.current_generation`): the new one
    holds all of it."""
    run_files: tuple[Path, ...]
    """Per-run row files it does not cover."""
    curve_files: tuple[Path, ...]
    """Per-run curve files it does not cover, the newest of each run."""
    covered: tuple[str, ...]
    """Every per-run file present (relative to the grid's folder): the new generation holds what
    each holds, or a newer version of it."""
    generation: int
    """Number of the generation this compaction writes (one above every existing one)."""
    kept: tuple[Part, ...] = ()
    """The base's parts the new generation keeps as they are (oldest first); the others are
    merged into its new part (:mod:`harness.store.tiers`)."""
    arrivals: int | None = None
    """:func:`harness.store.auto.arrivals` before the per-run files were listed."""

    @property
    def merged(self) -> tuple[Part, ...]:
        """The base's parts its new part holds (rewritten with the per-run files)."""
        parts = self.base.parts if self.base else ()
        kept = {p.number for p in self.kept}
        return tuple(p for p in parts if p.number not in kept)

    @property
    def needs_work(self) -> bool:
        """Whether there are per-run files to consolidate, parts to merge, or a generation
        written before covered lists existed to complete."""
        legacy = self.base is not None and self.base.completed_at is None
        parts = len(self.base.parts) if self.base else 0
        return bool(self.run_files or self.curve_files or legacy or parts > 1 + len(self.kept))

    def shadows(self) -> list[str]:
        """The runs whose curves in the kept parts the new part supersedes: those of the merged
        parts, and each run whose per-run curve is not its first attempt's (a retry; an
        earlier harness's or an import's file, whose attempt the name does not say)."""
        if not self.kept:
            return []
        found = {r for p in self.merged for r in p.shadows}
        for f in self.curve_files:
            run_id, version = paths.per_run_name(f)
            if paths.version_attempt(version) != 1:
                found.add(run_id)
        return sorted(found)


@dataclass(frozen=True, slots=True)
class CompactReport:
    """What :func:`compact` did."""

    grid: str
    """The grid's name."""
    generation: int | None
    """The generation written; None when there was nothing to do."""
    rows: int
    """Result rows in the new generation's new part."""
    curve_points: int
    """Curve points in the new generation's new part."""
    consolidated_files: int
    """Per-run files the generation covers."""
    removed_files: int
    """Files removed: those earlier compactions covered long enough ago, and the generations
    they superseded (:func:`harness.store.layout.remove_due`)."""
    parts: int = 1
    """Parts of the new generation (:mod:`harness.store.tiers`)."""


def compact(
    root: Path,
    grid: str,
    wait: bool = True,
    tiered: bool = False,
    arrivals: int | None = None,
    held: bool = False,
) -> CompactReport | None:
    """Consolidate ``grid``'s per-run rows and curves into a new generation (module docstring).

    Args:
        root: the results root.
        grid: the grid's name.
        wait: wait for another compaction of the grid to end (False: return None at once).
        tiered: merge only the parts that size tiers call for (:mod:`harness.store.tiers`,
            what a writer does by itself); False: merge every part into one.
        arrivals: :func:`harness.store.auto.arrivals` read by the caller before it decided
            (recorded with the generation; None: read here).
        held: the caller holds the grid's compaction lock already (a compaction in the
            background, :func:`harness.store.auto.auto_compact`, inherits it).

    Returns:
        What was written and removed; None when ``wait`` is False and another process compacts.

    Raises:
        UserError: ``grid`` has no results under ``root`` (names the grids that do).
    """
    require_grid(root, grid)
    folder = paths.compact_dir(root, grid)
    folder.mkdir(parents=True, exist_ok=True)
    lock = folder / ".lock"
    holding = contextlib.nullcontext(True) if held else None
    with holding or (locked(lock) if wait else try_locked(lock, wait_s=0.0)) as got:
        if got is False:
            return None  # another process compacts the grid now
        check_grid(root, grid)  # corrupt files moved aside, not merged
        snap = snapshot(root, grid, tiered=tiered, arrivals=arrivals)
        if not snap.needs_work:
            return CompactReport(grid, None, 0, 0, 0, remove_due(root, grid))
        rows, points, kinds = write_generation(snap)
        new = {"number": snap.generation, "rows": rows, "shadows": snap.shadows(), "kinds": kinds}
        parts = [*(_part_doc(p) for p in snap.kept), new]
        write_covered(root, grid, snap.generation, list(snap.covered), parts, snap.arrivals)
        written.trim(root, grid, frozenset(snap.covered))
        removed = remove_due(root, grid)
    remove_locks(root, grid, {paths.per_run_name(p)[0] for p in snap.run_files})
    covered = len(snap.run_files) + len(snap.curve_files)
    return CompactReport(grid, snap.generation, rows, points, covered, removed, len(parts))


def _part_doc(part: Part) -> dict[str, Any]:
    """A kept part as its generation's covered list records it."""
    return {
        "number": part.number,
        "rows": _rows(part),
        "shadows": sorted(part.shadows),
        "kinds": sorted(part.kinds),
    }


def _rows(part: Part) -> int:
    """Result rows in ``part`` (recorded, else from its file's footer)."""
    if part.rows is not None:
        return part.rows
    return pq.read_metadata(part.runs).num_rows if part.runs is not None else 0


def snapshot(root: Path, grid: str, tiered: bool = False, arrivals: int | None = None) -> Snapshot:
    """List the files a compaction of ``grid`` would cover now (``tiered``: keep the parts
    that size tiers leave alone, :func:`compact`)."""
    arrivals = count_arrivals(root, grid) if arrivals is None else arrivals  # before listing
    base = current_generation(root, grid)
    present = [
        f"{kind}/{name}"
        for kind, folder in (
            ("runs", paths.runs_dir(root, grid)),
            ("curves", paths.curves_dir(root, grid)),
        )
        for name in loose_names(folder)
    ]
    numbers = [
        n
        for kind in paths.GENERATION_KINDS
        for p in paths.generations(root, grid, kind)
        if (n := (paths.generation_of(p) or ("", 0))[1])
    ]
    run_files = tuple(uncovered(root, grid, base, "runs"))
    kept: tuple[Part, ...] = ()
    if tiered and base is not None and base.completed_at is not None and base.holds("runs"):
        parts = base.parts
        start = merge_from([_rows(p) for p in parts], len(run_files))
        kept = tuple(parts[:start])
    return Snapshot(
        grid=grid,
        root=root,
        base=base,
        run_files=run_files,
        curve_files=tuple(newest_per_run(uncovered(root, grid, base, "curves"))),
        covered=tuple(present),
        generation=max(numbers, default=0) + 1,
        kept=kept,
        arrivals=arrivals,
    )


def generation_path(snap: Snapshot, kind: str) -> Path:
    """``<grid>/compact/<kind>-<gen>.parquet`` of the snapshot's new generation."""
    return paths.generation_path(snap.root, snap.grid, kind, snap.generation)


def write_generation(snap: Snapshot) -> tuple[int, int, list[str]]:
    """Write the snapshot's new part (step 3, but its covered list): the per-run files and the
    merged parts; removes nothing. The files written are recorded as whole for the integrity
    check (:mod:`harness.store.integrity`): they were made from files it found whole.

    Returns:
        (result rows, curve points, kinds of file written).
    """
    generation_path(snap, "runs").parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(":memory:", config={"memory_limit": MEMORY_LIMIT, "threads": 2})
    con.execute("SET TimeZone = 'UTC'")  # timestamps come back as written: tz=UTC
    rows = points = 0
    merged = snap.merged
    base_runs = [p.runs for p in merged if p.runs is not None]
    base_curves = [(p.curves, p.shadows) for p in merged if p.curves is not None]
    run_sources = [paths.duck_path(p) for p in (*base_runs, *snap.run_files)]
    written = []
    if run_sources:
        select = (
            f"SELECT DISTINCT * FROM read_parquet({sql_list(run_sources)}, union_by_name = true) "
            "ORDER BY grid, run_id, created_at"
        )
        rows = _write_atomically(con, select, generation_path(snap, "runs"), RUNS_ROW_GROUP_SIZE)
        written.append("runs")
    if snap.curve_files or base_curves:
        select = curves_select(snap.curve_files, base_curves)  # newest part wins, runs by name
        points = _write_atomically(con, select, generation_path(snap, "curves"), ROW_GROUP_SIZE)
        written.append("curves")
    checked = Checked(snap.root, snap.grid)
    checked.now.update(checked.before)
    for kind in written:
        checked.mark_whole(generation_path(snap, kind))
    checked.save()
    return rows, points, written


def _write_atomically(con: duckdb.DuckDBPyConnection, select: str, path: Path, group: int) -> int:
    """Stream the result of ``select`` into ``path`` (temp name, fsync, rename); returns its
    rows. Written by pyarrow like the per-run files, every column nullable as there (DuckDB's
    own writer marks the columns that happen to hold no NULL as required)."""
    reader = con.sql(select).to_arrow_reader(group)
    schema = pa.schema([f.with_nullable(True) for f in reader.schema])
    count = 0

    def write(fh: IO[bytes]) -> None:
        nonlocal count
        with pq.ParquetWriter(fh, schema, write_page_checksum=True) as writer:
            for batch in reader:
                batch = pa.RecordBatch.from_arrays(batch.columns, schema=schema)
                writer.write_batch(batch, row_group_size=group)
                count += batch.num_rows

    atomic_write(path, write)
    return count
