"""Tidy a grid's folder (``harness clean``, and every compaction for the runs it consolidates):
lock files and per-run logs do not pile up without bound.

- A lock file (:func:`harness.core.paths.run_lock_path`, an evaluation's too) is removed only while
  this process holds it, so never while a run (or an evaluation) holds it; a process that opened
  it meanwhile locks a new file once it gets the lock (:func:`harness.core.files.try_locked`).
- The log of a run the local launcher trained (:func:`harness.core.paths.local_log_path`) is
  removed once the run has a result (``completed`` or ``diverged``) and no process trains it; the
  logs of runs that failed stay for a person to read.
- Files earlier compactions covered (:func:`harness.store.layout.remove_due`) go too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from harness.core import paths
from harness.core.files import is_locked, locked, remove_unheld_lock


@dataclass(frozen=True, slots=True)
class Tidied:
    """What :func:`clean` removed."""

    grid: str
    """The grid's name."""
    locks: int
    """Lock files no process held."""
    logs: int
    """Logs of runs with a result."""
    covered: int
    """Files compactions covered long enough ago, and the generations they superseded."""


def remove_locks(root: Path, grid: str, run_ids: Iterable[str] | None = None) -> int:
    """Remove the lock files of ``grid`` (only those of ``run_ids``; None: every one) that no
    process holds; returns how many."""
    folder = paths.locks_dir(root, grid)
    if run_ids is None:
        files = list(folder.iterdir()) if folder.is_dir() else []
        files = [p for p in files if paths.lock_run_id(p) is not None]
    else:
        pairs = (
            (paths.run_lock_path(root, grid, r), paths.eval_lock_path(root, grid, r))
            for r in run_ids
        )
        files = [p for pair in pairs for p in pair]
    return sum(remove_unheld_lock(p) for p in files)


def remove_logs(root: Path, grid: str, done: Iterable[str]) -> int:
    """Remove the local logs of the runs ``done`` (runs with a result) that no process trains
    now; returns how many."""
    removed = 0
    for run_id in done:
        log = paths.local_log_path(root, grid, run_id)
        if log.exists() and not is_locked(paths.run_lock_path(root, grid, run_id)):
            with contextlib.suppress(FileNotFoundError):
                log.unlink()
                removed += 1
    return removed


def clean(root: Path, grid: str) -> Tidied:
    """Tidy ``grid``'s folder (module docstring).

    Raises:
        UserError: ``grid`` has no results under ``root`` (names the grids that do).
    """
    from harness.store.db import runs_with_result  # DuckDB: read the rows
    from harness.store.layout import remove_due, require_grid

    require_grid(root, grid)
    with locked(paths.compact_dir(root, grid) / ".lock"):
        covered = remove_due(root, grid)
    locks = remove_locks(root, grid)
    logs = remove_logs(root, grid, runs_with_result(root, grid))
    return Tidied(grid, locks, logs, covered)
