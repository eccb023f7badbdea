"""Consolidate a grid's per-run result files into larger Parquet files (``harness compact``).

Thousands of runs leave thousands of one-row files ``runs/<run_id>.parquet`` and loss curves
``curves/<run_id>.parquet``; a query over them pays one file open each. Compaction merges them,
together with the earlier consolidated files, into one new *generation*::

    <grid>/compact/runs-<gen>.parquet     every distinct result row, sorted by (run_id, created_at)
    <grid>/compact/curves-<gen>.parquet   per run, the curve the ``curves`` view showed, by step

and then removes the files it covered. Nothing is lost and nothing is seen twice, wherever it
stops:

1. Under an exclusive lock (one compaction per grid at a time) the per-run files and the older
   generations are listed, each per-run file with its (inode, mtime, size): the snapshot.
2. The new generation is written under a temporary name, fsynced and renamed into place; it holds
   every row of the snapshot. A crash before the rename leaves a temporary file no view reads.
3. The snapshot's per-run files are removed (one rewritten since the snapshot, by a retried run,
   is kept), then the older generations.

Between 2 and 3 the same rows exist twice on disk; the views of :mod:`harness.store.db` resolve
that: ``runs`` shows the newest row per run, ``curves`` takes a run's points from its per-run file
when there is one, else from the newest generation that holds the run. Runs that finish during a
compaction keep their per-run files and are consolidated by the next one.

Rows: every distinct row is kept (an older row of a retried run too; the ``runs`` view shows the
newest), only exact copies (left by an interrupted compaction) collapse into one; columns are the
union of the files' columns, types unchanged. Curves: a run has one curve (a retry overwrites its
file), so the generation holds the points the view showed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from harness.core import paths
from harness.core.errors import UserError
from harness.core.files import atomic_write, locked
from harness.store.db import curves_select, sql_list
from harness.store.integrity import check_grid

ROW_GROUP_SIZE = 131_072
"""Rows per Parquet row group of a generation file (curve files are sorted by run, so a query
for a few runs reads a few row groups)."""

_GENERATION = re.compile(r"^(runs|curves)-(\d+)\.parquet$")


@dataclass(frozen=True, slots=True)
class Stamped:
    """A per-run file as the snapshot saw it."""

    path: Path
    """The file."""
    stamp: tuple[int, int, int]
    """(inode, mtime in ns, size): a file replaced since then has another stamp."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What one compaction covers."""

    grid: str
    """The grid's name."""
    folder: Path
    """Its results folder."""
    run_files: tuple[Stamped, ...]
    """Per-run result rows."""
    curve_files: tuple[Stamped, ...]
    """Per-run loss curves."""
    run_generations: tuple[Path, ...]
    """Earlier ``compact/runs-<gen>.parquet`` files, oldest first."""
    curve_generations: tuple[Path, ...]
    """Earlier ``compact/curves-<gen>.parquet`` files, oldest first."""
    generation: int
    """Number of the generation this compaction writes (one above every existing one)."""

    @property
    def needs_work(self) -> bool:
        """Whether there are per-run files, or more than one generation of a kind."""
        return bool(
            self.run_files
            or self.curve_files
            or len(self.run_generations) > 1
            or len(self.curve_generations) > 1
        )


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
    """Files removed afterwards (covered per-run files and older generations)."""


def compact(root: Path, grid: str) -> CompactReport:
    """Consolidate ``grid``'s per-run rows and curves into a new generation (module docstring).

    Args:
        root: the results root.
        grid: the grid's name.

    Returns:
        What was written and removed.

    Raises:
        UserError: ``grid`` has no results under ``root`` (names the grids that do).
    """
    grids = paths.grids_in(root)
    if grid not in grids:
        known = ", ".join(grids) or "none"
        raise UserError(f"no results for grid {grid!r} under {root}; grids there: {known}")
    folder = paths.compact_dir(root, grid)
    folder.mkdir(parents=True, exist_ok=True)
    with locked(folder / ".lock"):
        check_grid(root, grid)  # corrupt files moved aside, not merged
        snap = snapshot(root, grid)
        if not snap.needs_work:
            return CompactReport(grid, None, 0, 0, 0, 0)
        rows, points = write_generation(snap)
        removed = remove_covered(snap)
    covered = len(snap.run_files) + len(snap.curve_files)
    return CompactReport(grid, snap.generation, rows, points, covered, removed)


def snapshot(root: Path, grid: str) -> Snapshot:
    """List (and stamp) the files a compaction of ``grid`` would cover now."""
    gens: dict[str, list[tuple[int, Path]]] = {"runs": [], "curves": []}
    compacted = paths.compact_dir(root, grid)
    for p in compacted.glob("*.parquet") if compacted.is_dir() else ():
        m = _GENERATION.match(p.name)
        if m:
            gens[m.group(1)].append((int(m.group(2)), p))
    numbers = [n for kind in gens.values() for n, _ in kind]
    return Snapshot(
        grid=grid,
        folder=paths.grid_dir(root, grid),
        run_files=_stamped(paths.runs_dir(root, grid)),
        curve_files=_stamped(paths.curves_dir(root, grid)),
        run_generations=tuple(p for _, p in sorted(gens["runs"])),
        curve_generations=tuple(p for _, p in sorted(gens["curves"])),
        generation=max(numbers, default=0) + 1,
    )


def _stamped(folder: Path) -> tuple[Stamped, ...]:
    out = []
    for p in sorted(folder.glob("*.parquet")) if folder.is_dir() else ():
        try:
            out.append(Stamped(p, _stamp(p)))
        except FileNotFoundError:  # removed meanwhile (another writer's temp file never matches)
            continue
    return tuple(out)


def _stamp(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_ino, st.st_mtime_ns, st.st_size


def generation_path(snap: Snapshot, kind: str) -> Path:
    """``<grid>/compact/<kind>-<gen>.parquet`` of the snapshot's new generation."""
    return snap.folder / "compact" / f"{kind}-{snap.generation:06d}.parquet"


def write_generation(snap: Snapshot) -> tuple[int, int]:
    """Write the snapshot's new generation (step 2); removes nothing.

    Returns:
        (result rows, curve points) written.
    """
    generation_path(snap, "runs").parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(":memory:")
    con.execute("SET TimeZone = 'UTC'")  # timestamps come back as written: tz=UTC
    rows = points = 0
    run_sources = [paths.duck_path(p) for p in snap.run_generations]
    run_sources += [paths.duck_path(f.path) for f in snap.run_files]
    if run_sources:
        select = (
            f"SELECT DISTINCT * FROM read_parquet({sql_list(run_sources)}, union_by_name = true) "
            "ORDER BY grid, run_id, created_at"
        )
        rows = _write_atomically(con, select, generation_path(snap, "runs"))
    curve_gens = [str(p) for p in snap.curve_generations]
    if snap.curve_files or curve_gens:
        per_run = [str(f.path) for f in snap.curve_files] or None
        select = f"SELECT * FROM ({curves_select(per_run, curve_gens)}) ORDER BY grid, run_id, step"
        points = _write_atomically(con, select, generation_path(snap, "curves"))
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


def remove_covered(snap: Snapshot) -> int:
    """Remove the snapshot's per-run files still as stamped, then older generations (step 3).

    Returns:
        Files removed.
    """
    removed = 0
    for f in (*snap.run_files, *snap.curve_files):
        try:
            if _stamp(f.path) != f.stamp:
                continue  # rewritten since the snapshot (a retried run): not in the generation
            f.path.unlink()
            removed += 1
        except FileNotFoundError:
            continue
    for p in (*snap.run_generations, *snap.curve_generations):
        p.unlink(missing_ok=True)
        removed += 1
    return removed
