"""How many result rows a grid has received: one byte appended to its arrivals file per row
(:func:`harness.core.paths.arrivals_path`), so that a writer learns how many rows piled up since
the last compaction without listing ``runs/`` (:mod:`harness.store.auto`)."""

from __future__ import annotations

import os
from pathlib import Path

from harness.core import paths


def count_arrivals(root: Path, grid: str) -> int:
    """Rows written to ``grid`` since its arrivals file was made (its size in bytes)."""
    try:
        return os.stat(paths.arrivals_path(root, grid)).st_size
    except OSError:
        return 0


def arrive(root: Path, grid: str) -> int:
    """Count one more row written to ``grid`` (one byte appended: atomic on a local file
    system, at worst a miscount on a network one, which only moves when it compacts); returns
    the count. Never raises: a count that cannot be kept costs an early or late compaction."""
    try:
        fd = os.open(paths.arrivals_path(root, grid), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, b".")
            return os.fstat(fd).st_size
        finally:
            os.close(fd)
    except OSError:
        return 0
