"""Corrupt result files are moved aside, never fatal.

Every file the harness writes is written atomically, so a corrupt one comes from outside: a copy
cut short, a disk that lost its tail, a hand edit. One such file used to take down every query of
its results folder. Now each command that reads a grid first looks at the ends of its Parquet
files (a complete file starts and ends with ``PAR1`` and its footer fits inside it; about 15 µs
a file) and moves a corrupt one to ``<grid>/quarantine/`` (same relative path) with a one-line
warning naming it. Its run then counts as missing, so the next ``submit`` runs it again; a run
whose curve is corrupt has its row moved aside with it, for the same reason.
"""

from __future__ import annotations

import os
from pathlib import Path

from harness.core import paths
from harness.core.files import quarantine

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


def aside(root: Path, grid: str, path: Path, cause: str) -> Path:
    """Move ``path`` (a file of ``grid``) to the same place under ``<grid>/quarantine/``."""
    folder = paths.grid_dir(root, grid)
    return quarantine(path, paths.quarantine_dir(root, grid) / path.relative_to(folder), cause)


def check_grid(root: Path, grid: str) -> list[Path]:
    """Move every corrupt Parquet file of ``grid`` aside (module docstring); returns them.

    Raises:
        UserError: a corrupt file cannot be moved (a read-only folder): one line naming it.
    """
    moved: list[Path] = []

    def aside_if_corrupt(path: Path) -> bool:
        fault = parquet_fault(path)  # None for a missing file too
        if fault is not None:
            aside(root, grid, path, fault)
            moved.append(path)
        return fault is not None

    for p in _files(paths.runs_dir(root, grid)):
        aside_if_corrupt(p)
    for p in _files(paths.curves_dir(root, grid)):
        row = paths.run_path(root, grid, p.stem)
        if aside_if_corrupt(p) and row.exists() and row not in moved:
            aside(root, grid, row, f"its curve {p.name} is corrupt (the run is run again)")
            moved.append(row)
    for p in _files(paths.compact_dir(root, grid)):
        aside_if_corrupt(p)
    aside_if_corrupt(paths.manifest_path(root, grid))
    return moved


def check_manifest(root: Path, grid: str) -> bool:
    """Move ``grid``'s manifest aside if it is corrupt; returns whether it did."""
    path = paths.manifest_path(root, grid)
    fault = parquet_fault(path)
    if fault is None:
        return False
    aside(root, grid, path, f"{fault}; submit the grid again to plan its runs anew")
    return True


def _files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.parquet")) if folder.is_dir() else []
