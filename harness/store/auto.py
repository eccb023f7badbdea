"""Compaction by itself: the writer of a result row compacts the grid once enough per-run row
files have piled up (:mod:`harness.store.compact` says why this is safe with concurrent writers
and readers). Imports no DuckDB until it compacts."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.core import paths
from harness.store.layout import current_generation, due, loose

AUTO_COMPACT_FILES = 256
"""Per-run row files not yet consolidated at which a writer compacts the grid by itself."""


def loose_rows(root: Path, grid: str) -> tuple[int, int]:
    """(per-run row files of ``grid``, those the current generation does not cover)."""
    files = loose(paths.runs_dir(root, grid))
    gen = current_generation(root, grid) if files else None
    if gen is None or not gen.covered:
        return len(files), len(files)
    folder = paths.grid_dir(root, grid)
    return len(files), sum(str(p.relative_to(folder)) not in gen.covered for p in files)


def auto_compact(root: Path, grid: str, threshold: int | None = None) -> None:
    """Compact ``grid`` when ``threshold`` (default :data:`AUTO_COMPACT_FILES`) per-run row files
    are not consolidated yet, unless another process is compacting it (module docstring); where
    twice that many are on disk, remove those consolidated long enough ago
    (:func:`harness.store.layout.remove_due`). Never raises: a compaction that fails costs a
    warning line, and the per-run files stay readable."""
    threshold = AUTO_COMPACT_FILES if threshold is None else threshold
    try:
        total, new = loose_rows(root, grid)
        if new < threshold and (total < 2 * threshold or not due(root, grid)):
            return
        from harness.store.compact import compact  # DuckDB: only once rows piled up

        compact(root, grid, wait=False)  # removes what is due, compacts what piled up
    except Exception as e:  # the row is written: a failed compaction loses nothing
        line = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        sys.stderr.write(
            f"warning: compacting {grid} by itself failed ({line}); "
            f"'harness compact {grid}' tries again\n"
        )
