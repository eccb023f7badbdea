"""Corrupt result files are moved aside, never fatal.

Every file the harness writes is written atomically, so a corrupt one comes from outside: a copy
cut short, a disk that lost its tail or garbled a block, a hand edit. One such file used to take
down every query of its results folder. Now each command that reads a grid first checks its
Parquet files and moves a corrupt one to ``<grid>/quarantine/`` (same relative path) with a
one-line warning naming it. Its run then counts as missing, so the next ``submit`` runs it again;
a run whose curve is corrupt has its row moved aside with it, for the same reason, and so have the
runs whose curves a corrupt consolidated curve file held (:func:`check_grid`).

A file is checked in full once: every page read and decoded, their checksums verified (the store
writes page checksums), so a file garbled in the middle with its ends intact is found too. Files
found whole are remembered in ``<grid>/.verified.json`` by (inode, size, mtime, ctime), which no
edit in place leaves unchanged (the kernel sets ctime); later commands only ``stat`` them, about
5 µs a file. A file not yet checked, or changed since, has its ends looked at (a complete file
starts and ends with ``PAR1`` and its footer fits inside it) and is then read.

A per-run file is whole as its writer wrote it: the writer appends its size and SHA-256 to
``<grid>/.written`` (:mod:`harness.store.written`), and the first reader that meets it reads
its bytes and compares them (about 0.1 ms a file) instead of decoding every page twice
(pyarrow, then DuckDB: about 3 ms a file, 1.5 s of CPU for the 255 new rows and curves a first
read after a sweep's last compaction met). A file whose bytes differ, or that has no line (a
line lost to a write that raced the compaction trimming the record, an earlier harness's file),
is read in full as before. A compaction drops the lines of the files it covered.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from harness.core import paths
from harness.core.files import atomic_write_text, quarantine
from harness.store import written
from harness.store.layout import grid_files

if TYPE_CHECKING:  # imported where used: reading a submission record needs neither
    import duckdb
    import pyarrow as pa

MAGIC = b"PAR1"
"""The four bytes a Parquet file starts and ends with."""


def parquet_fault(path: Path) -> str | None:
    """Why ``path`` is not a complete Parquet file, or None when its ends look whole (size,
    the magic bytes at both ends, a footer length that fits)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None  # removed meanwhile (compaction): nothing to read, nothing corrupt
    try:
        size = os.fstat(fd).st_size
        if size < 12:
            return f"corrupt Parquet file ({size} bytes)"
        head, tail = os.pread(fd, 4, 0), os.pread(fd, 8, size - 8)
    finally:
        os.close(fd)
    if head != MAGIC or tail[4:] != MAGIC:
        return "corrupt Parquet file (truncated or overwritten: no PAR1 at both ends)"
    if int.from_bytes(tail[:4], "little") > size - 12:
        return "corrupt Parquet file (its footer is longer than the file)"
    return None


def arrow_fault(path: Path) -> str | None:
    """Why pyarrow cannot read ``path`` in full (every page decoded, its checksum verified where
    the file has them: the store writes them), or None. Reads one row group at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:  # one row group at a time: memory bounded by a row group, not the file
        pf = pq.ParquetFile(path, page_checksum_verification=True)
        for i in range(pf.num_row_groups):
            pf.read_row_group(i, use_threads=False)
    except (FileNotFoundError, PermissionError):
        return None  # removed meanwhile, or not ours to judge
    except (OSError, pa.ArrowException, ValueError, IndexError, EOFError) as e:
        return _garbled(e)
    return None


def _duckdb_fault(con: duckdb.DuckDBPyConnection, files: list[Path]) -> str | None:
    """Why DuckDB (a stricter reader of page headers than pyarrow) cannot read ``files`` in
    full, or None. Every value is decoded and hashed, none kept: memory is bounded by a row
    group, not the files."""
    import duckdb

    sql = "SELECT count(*), sum(hash(t)) FROM read_parquet($files, union_by_name = true) t"
    try:  # every value decoded (hashed), none kept
        con.execute(sql, {"files": [paths.duck_path(p) for p in files]}).fetchall()
    except duckdb.Error as e:
        return _garbled(e)
    return None


def _garbled(e: BaseException) -> str:
    detail = (str(e).strip().splitlines() or [type(e).__name__])[0][:150]
    return f"corrupt Parquet file (garbled: {detail})"


_BATCH = 256
"""Files DuckDB reads in one query when it checks them (one query that fails is followed by
one per file, to name the corrupt ones)."""

Stamp = list[int]


class Checked:
    """The files of one grid found whole, by stamp (module docstring); :meth:`save` keeps them
    for the next command."""

    def __init__(self, root: Path, grid: str) -> None:
        self.folder = paths.grid_dir(root, grid)
        self.path = paths.verified_path(root, grid)
        self.before: dict[str, Stamp] = {}
        with contextlib.suppress(OSError, ValueError, TypeError):
            doc = json.loads(self.path.read_text())
            self.before = {str(k): list(v) for k, v in doc.items()}
        self.now: dict[str, Stamp] = {}
        self.faults: dict[str, str] = {}
        self._prefix = len(str(self.folder)) + 1
        self.written = written.read(root, grid)

    def key(self, path: Path) -> str:
        """``path`` relative to the grid's folder (its name in the record of files found whole)."""
        return str(path)[self._prefix :]

    def fault(self, path: Path) -> str | None:
        """Why ``path`` is corrupt, or None when it is whole (or missing)."""
        key = self.key(path)
        if key not in self.now and key not in self.faults:
            self.verify([path])
        return self.faults.get(key)

    def verify(self, files: list[Path]) -> None:
        """Check every file of ``files`` not found whole before, in one pass: its ends, then
        pyarrow (a thread per core), then DuckDB (in batches of :data:`_BATCH` files)."""
        todo: list[tuple[Path, Stamp]] = []
        for path in files:
            try:
                st = path.stat()
            except FileNotFoundError:
                continue  # removed meanwhile (compaction): nothing to read, nothing corrupt
            stamp = [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
            key = self.key(path)
            if self.before.get(key) == stamp or self._as_written(key, path, st.st_size):
                self.now[key] = stamp
            elif (fault := parquet_fault(path)) is not None:
                self.faults[key] = fault
            else:
                todo.append((path, stamp))
        if not todo:
            return
        with ThreadPoolExecutor(min(8, os.cpu_count() or 1)) as pool:
            found = list(pool.map(arrow_fault, [p for p, _ in todo]))
        readable = []
        for (path, stamp), fault in zip(todo, found, strict=True):
            if fault is not None:
                self.faults[self.key(path)] = fault
            else:
                readable.append((path, stamp))
        import duckdb  # here: a run process that reads its manifest imports no DuckDB

        con = duckdb.connect(":memory:", config={"memory_limit": "256MB", "threads": 1})
        # No progress bar on the user's terminal for a long check; in Jupyter without ipywidgets
        # DuckDB refuses the setting itself (there is no bar to turn off).
        with contextlib.suppress(duckdb.Error):
            con.execute("SET enable_progress_bar = false")
        by_folder: dict[Path, list[tuple[Path, Stamp]]] = {}
        for path, stamp in readable:
            by_folder.setdefault(path.parent, []).append((path, stamp))
        for group in by_folder.values():
            for i in range(0, len(group), _BATCH):
                batch = group[i : i + _BATCH]
                whole = _duckdb_fault(con, [p for p, _ in batch]) is None
                for path, stamp in batch:
                    fault = None if whole else _duckdb_fault(con, [path])
                    if fault is None:
                        self.now[self.key(path)] = stamp
                    else:
                        self.faults[self.key(path)] = fault

    def _as_written(self, key: str, path: Path, size: int) -> bool:
        """Whether ``path`` holds the bytes its writer recorded (:mod:`harness.store.written`)."""
        recorded = self.written.get(key)
        if recorded is None or recorded[0] != size:
            return False
        try:
            return hashlib.sha256(path.read_bytes()).hexdigest() == recorded[1]
        except OSError:
            return False

    def mark_whole(self, path: Path) -> None:
        """Record ``path`` as whole without reading it (a file its writer made from files found
        whole, :mod:`harness.store.compact`)."""
        with contextlib.suppress(FileNotFoundError):
            st = path.stat()
            self.now[self.key(path)] = [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]

    def save(self) -> None:
        """Remember the files found whole (those checked now: moved files drop out); a folder
        that refuses the write is checked in full again next time."""
        if self.now != self.before:
            with contextlib.suppress(OSError):
                atomic_write_text(self.path, json.dumps(self.now))


def aside(root: Path, grid: str, path: Path, cause: str) -> Path:
    """Move ``path`` (a file of ``grid``) to the same place under ``<grid>/quarantine/``."""
    folder = paths.grid_dir(root, grid)
    return quarantine(path, paths.quarantine_dir(root, grid) / path.relative_to(folder), cause)


def check_grid(root: Path, grid: str) -> list[Path]:
    """Move every corrupt Parquet file of ``grid`` that readers read aside (module docstring);
    returns them. Those are the files :func:`harness.store.layout.grid_files` names (the per-run
    files the newest generation does not cover, the newest curve of each run, the generation's
    parts) and the manifest: a per-run file a compaction covered, kept for readers that listed
    it before (:data:`~harness.store.layout.GRACE_S`), is read by no one after and not checked
    (at 100,000 runs a read after new rows checked the thousand such files of the last few
    compactions). Where a part is moved aside, the per-run files it covered are read again,
    and checked then.

    Raises:
        UserError: a corrupt file cannot be moved (a read-only folder): one line naming it.
    """
    checked = Checked(root, grid)
    moved: list[Path] = []

    def aside_if_corrupt(path: Path) -> bool:
        fault = checked.fault(path)  # None for a missing file too
        if fault is not None:
            aside(root, grid, path, fault)
            moved.append(path)
        return fault is not None

    while True:  # again after a part was moved aside: readers read what it covered then
        before = len(moved)
        found = grid_files(root, grid)
        gen = found.generation
        parts = [*(gen.runs if gen else ()), *(p for p, _ in found.curve_parts)]
        checked.verify([*found.rows, *found.curves, *parts, paths.manifest_path(root, grid)])
        for p in found.rows:
            if p not in moved:
                aside_if_corrupt(p)
        for p in found.curves:
            if aside_if_corrupt(p):
                row = paths.run_path(root, grid, *paths.per_run_name(p))  # written with it
                if row.exists() and row not in moved:
                    aside(root, grid, row, f"its curve {p.name} is corrupt (the run is run again)")
                    moved.append(row)
        lost = [p for p in parts if aside_if_corrupt(p)]
        if any(p.name.startswith("curves-") for p in lost):
            moved += _rows_without_curves_aside(root, grid, checked)
        if len(moved) == before:
            break
    check_manifest(root, grid, checked)
    checked.save()
    return moved


def check_manifest(root: Path, grid: str, checked: Checked | None = None) -> bool:
    """Move ``grid``'s manifest aside if it is corrupt; returns whether it did."""
    path = paths.manifest_path(root, grid)
    fault = (checked or Checked(root, grid)).fault(path)
    if fault is None:
        return False
    aside(root, grid, path, f"{fault}; submit the grid again to plan its runs anew")
    return True


def _rows_without_curves_aside(root: Path, grid: str, checked: Checked) -> list[Path]:
    """After a consolidated curve file was moved aside: the consolidated rows of the runs whose
    curve it held (a run trained here, with steps done, whose curve is nowhere else now) are
    moved to ``quarantine/compact/`` too, so that those runs count as missing and the next
    ``submit`` trains them again, rather than keeping results whose curves are lost."""
    import pyarrow.parquet as pq

    have = {paths.per_run_name(p)[0] for p in _files(paths.curves_dir(root, grid))}
    for p in paths.generations(root, grid, "curves"):
        have.update(pq.read_table(p, columns=["run_id"]).column("run_id").to_pylist())
    moved = []
    for p in paths.generations(root, grid, "runs"):
        table = pq.read_table(p)
        names = table.schema.names
        lost = {
            r["run_id"]
            for r in table.select(
                [c for c in ("run_id", "steps_done", "source") if c in names]
            ).to_pylist()
            if r["run_id"] not in have and (r.get("steps_done") or 0) > 0 and not r.get("source")
        }
        if lost:
            _split_off(root, grid, p, table, lost)
            checked.now.pop(checked.key(p), None)
            moved.append(p)
    return moved


def _split_off(root: Path, grid: str, path: Path, table: pa.Table, lost: set[str]) -> None:
    """Move the rows of the runs ``lost`` out of the consolidated row file ``path`` (holding
    ``table``) to ``quarantine/compact/<name>.no-curves.parquet``; warn in one line."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from harness.store.rows import atomic_write_table

    gone = pa.array([r in lost for r in table.column("run_id").to_pylist()])
    n = 0
    dest = paths.lost_curves_path(root, grid, path.stem)
    while dest.exists():
        n += 1
        dest = paths.lost_curves_path(root, grid, path.stem, n)
    atomic_write_table(table.filter(gone), dest)
    kept = table.filter(pc.invert(gone))
    if kept.num_rows:
        atomic_write_table(kept, path)
    else:
        path.unlink()
    sys.stderr.write(
        f"warning: {path}: the curves of {len(lost)} run(s) whose rows it holds are lost; "
        f"their rows moved to {dest} (the runs are run again)\n"
    )


def _files(folder: Path) -> list[Path]:
    files = folder.glob(paths.PER_RUN_FILES) if folder.is_dir() else ()
    return sorted(files, key=lambda p: p.name)
