"""Consolidate a grid's per-run result files into larger Parquet files (``harness compact``,
and by itself once enough per-run files have arrived: :func:`harness.store.auto.auto_compact`).

Thousands of runs leave thousands of one-row files ``runs/<run_id>.<version>.parquet`` and loss
curves ``curves/<run_id>.<version>.parquet``; a query over them pays one file open each.
Compaction merges them, with the current generation, into one new *generation*::

    <grid>/compact/runs-<gen>.parquet     every distinct result row
    <grid>/compact/curves-<gen>.parquet   per run, the curve the ``curves`` view showed
    <grid>/compact/covered-<gen>.json     the per-run files it holds: written last, it completes it

Nothing is lost and nothing is seen twice, wherever it stops, and no reader meets a file
removed under it (:mod:`harness.store.layout`):

1. Under an exclusive lock (one compaction per grid at a time) the current generation and the
   per-run files it does not cover are listed: the snapshot.
2. The new generation is written under temporary names and renamed into place, then its covered
   list (every per-run file present at the snapshot). Until the list exists readers ignore it; a
   crash before leaves files the next compaction removes.
3. The files that compactions covered long enough ago (:data:`harness.store.layout.GRACE_S`),
   and the generations they superseded, are removed; so are the lock files of the runs it
   consolidated that no process holds (:mod:`harness.store.tidy`).

Per-run files are never replaced (:mod:`harness.store.rows`), so a file in the snapshot holds
what was read. Runs that finish during a compaction keep their per-run files and are
consolidated by the next one.

**When it happens by itself.** Every writer of a result row (:func:`harness.store.spill.
write_or_spill`: the process that trained the run, or that recorded how it ended) counts the
per-run row files the current generation does not cover, one directory listing; at
:data:`~harness.store.auto.AUTO_COMPACT_FILES` it compacts the grid unless another process is
compacting it (the lock is tried, never waited for). So a store holds at most about that many
loose row files however many runs arrive, readers pay for at most that many, and nobody has to
remember ``harness compact``. A compaction reads the current generation and the new files once
and streams them (DuckDB with a memory limit), so its memory is bounded by
:data:`MEMORY_LIMIT`, not by the data.

Rows: every distinct row is kept (an older row of a retried run too; the ``runs`` view shows the
newest), only exact copies collapse into one; columns are the union of the files' columns, types
unchanged. Curves: the generation holds, per run, the points the view showed (its newest
per-run curve, else the older generation's).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import IO

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from harness.core import paths
from harness.core.files import atomic_write, locked, try_locked
from harness.store.db import curves_select, sql_list
from harness.store.integrity import Checked, check_grid
from harness.store.layout import (
    Generation,
    current_generation,
    loose,
    newest_per_run,
    remove_due,
    require_grid,
    uncovered,
    write_covered,
)
from harness.store.tidy import remove_locks

MEMORY_LIMIT = "512MB"
"""DuckDB's memory limit while a compaction reads and writes (it spills to disk beyond)."""

ROW_GROUP_SIZE = 131_072
"""Rows per Parquet row group of a generation file (a run's points are contiguous, so a query for
a few runs reads a few row groups; the integrity check reads one at a time)."""


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

    @property
    def needs_work(self) -> bool:
        """Whether there are per-run files to consolidate, or a generation written before covered
        lists existed to complete."""
        legacy = self.base is not None and self.base.completed_at is None
        return bool(self.run_files or self.curve_files or legacy)


@dataclass(frozen=True, slots=True)
class CompactReport:
    """What :func:`compact` did."""

    grid: str
    """The grid's name."""
    generation: int | None
    """The generation written; None when there was nothing to do."""
    rows: int
    """Result rows in the new generation."""
    curve_points: int
    """Curve points in the new generation."""
    consolidated_files: int
    """Per-run files the generation covers."""
    removed_files: int
    """Files removed: those earlier compactions covered long enough ago, and the generations
    they superseded (:func:`harness.store.layout.remove_due`)."""


def compact(root: Path, grid: str, wait: bool = True) -> CompactReport | None:
    """Consolidate ``grid``'s per-run rows and curves into a new generation (module docstring).

    Args:
        root: the results root.
        grid: the grid's name.
        wait: wait for another compaction of the grid to end (False: return None at once).

    Returns:
        What was written and removed; None when ``wait`` is False and another process compacts.

    Raises:
        UserError: ``grid`` has no results under ``root`` (names the grids that do).
    """
    require_grid(root, grid)
    folder = paths.compact_dir(root, grid)
    folder.mkdir(parents=True, exist_ok=True)
    lock = folder / ".lock"
    with locked(lock) if wait else try_locked(lock, wait_s=0.0) as held:
        if held is False:
            return None  # another process compacts the grid now
        check_grid(root, grid)  # corrupt files moved aside, not merged
        snap = snapshot(root, grid)
        if not snap.needs_work:
            return CompactReport(grid, None, 0, 0, 0, remove_due(root, grid))
        rows, points = write_generation(snap)
        write_covered(root, grid, snap.generation, list(snap.covered))
        removed = remove_due(root, grid)
    remove_locks(root, grid, {paths.per_run_name(p)[0] for p in snap.run_files})
    covered = len(snap.run_files) + len(snap.curve_files)
    return CompactReport(grid, snap.generation, rows, points, covered, removed)


def snapshot(root: Path, grid: str) -> Snapshot:
    """List the files a compaction of ``grid`` would cover now."""
    base = current_generation(root, grid)
    folder = paths.grid_dir(root, grid)
    present = [*loose(paths.runs_dir(root, grid)), *loose(paths.curves_dir(root, grid))]
    numbers = [
        n
        for kind in paths.GENERATION_KINDS
        for p in paths.generations(root, grid, kind)
        if (n := (paths.generation_of(p) or ("", 0))[1])
    ]
    return Snapshot(
        grid=grid,
        root=root,
        base=base,
        run_files=tuple(uncovered(root, grid, base, "runs")),
        curve_files=tuple(newest_per_run(uncovered(root, grid, base, "curves"))),
        covered=tuple(str(p.relative_to(folder)) for p in present),
        generation=max(numbers, default=0) + 1,
    )


def generation_path(snap: Snapshot, kind: str) -> Path:
    """``<grid>/compact/<kind>-<gen>.parquet`` of the snapshot's new generation."""
    return paths.generation_path(snap.root, snap.grid, kind, snap.generation)


def write_generation(snap: Snapshot) -> tuple[int, int]:
    """Write the snapshot's new generation (step 3, but its covered list); removes nothing.
    The files written are recorded as whole for the integrity check (:mod:`harness.store.
    integrity`): they were made from files it found whole.

    Returns:
        (result rows, curve points) written.
    """
    generation_path(snap, "runs").parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(":memory:", config={"memory_limit": MEMORY_LIMIT, "threads": 2})
    con.execute("SET TimeZone = 'UTC'")  # timestamps come back as written: tz=UTC
    rows = points = 0
    base_runs = snap.base.runs if snap.base else None
    base_curves = snap.base.curves if snap.base else None
    run_sources = [paths.duck_path(p) for p in (base_runs, *snap.run_files) if p is not None]
    written = []
    if run_sources:
        select = (
            f"SELECT DISTINCT * FROM read_parquet({sql_list(run_sources)}, union_by_name = true) "
            "ORDER BY grid, run_id, created_at"
        )
        rows = _write_atomically(con, select, generation_path(snap, "runs"))
        written.append(generation_path(snap, "runs"))
    if snap.curve_files or base_curves is not None:
        select = curves_select(snap.curve_files, base_curves)  # base first, then runs by name
        points = _write_atomically(con, select, generation_path(snap, "curves"))
        written.append(generation_path(snap, "curves"))
    checked = Checked(snap.root, snap.grid)
    checked.now.update(checked.before)
    for p in written:
        checked.mark_whole(p)
    checked.save()
    return rows, points


def _write_atomically(con: duckdb.DuckDBPyConnection, select: str, path: Path) -> int:
    """Stream the result of ``select`` into ``path`` (temp name, fsync, rename); returns its
    rows. Written by pyarrow like the per-run files, every column nullable as there (DuckDB's
    own writer marks the columns that happen to hold no NULL as required)."""
    reader = con.sql(select).to_arrow_reader(ROW_GROUP_SIZE)
    schema = pa.schema([f.with_nullable(True) for f in reader.schema])
    count = 0

    def write(fh: IO[bytes]) -> None:
        nonlocal count
        with pq.ParquetWriter(fh, schema, write_page_checksum=True) as writer:
            for batch in reader:
                writer.write_batch(pa.RecordBatch.from_arrays(batch.columns, schema=schema))
                count += batch.num_rows

    atomic_write(path, write)
    return count
