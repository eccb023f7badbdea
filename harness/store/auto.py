"""Compaction by itself: the writer of a result row compacts the grid once enough per-run row
files have piled up (:mod:`harness.store.compact` says why this is safe with concurrent writers
and readers), merging parts by size tiers (:mod:`harness.store.tiers`), so that what a row costs
does not grow with the store. Imports no DuckDB until it compacts.

How many rows piled up is counted without listing ``runs/``: every writer appends one byte to
the grid's arrivals file (:func:`harness.core.paths.arrivals_path`) and each compaction records
the count it saw; the difference is the rows it has not consolidated (a few more where a row
arrived while a compaction listed the files: it then compacts a little early). A grid whose
generation has no count (written by an earlier harness) is counted by listing, as before.

No writer waits for a compaction (it took 3 to 6 s of CPU per 256 rows, stalling the run that
wrote the 256th): the writer takes the grid's compaction lock, hands it to a new process that
compacts (:data:`BACKGROUND`; the lock's open file is inherited, so no second writer starts
another meanwhile) and returns. Where no process can be started, it compacts itself.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import harness
from harness.core import paths
from harness.store.layout import current_generation, due, loose

AUTO_COMPACT_FILES = 256
"""Per-run row files not yet consolidated at which a writer compacts the grid by itself."""

BACKGROUND = True
"""Compact in a process of its own, the writer returning at once (False: the writer compacts,
as tests that shrink the tiers in their own process need)."""


def loose_rows(root: Path, grid: str) -> tuple[int, int]:
    """(per-run row files of ``grid``, those the current generation does not cover): by
    listing ``runs/``."""
    files = loose(paths.runs_dir(root, grid))
    gen = current_generation(root, grid) if files else None
    if gen is None or not gen.covered:
        return len(files), len(files)
    return len(files), sum(f"runs/{p.name}" not in gen.covered for p in files)


def auto_compact(root: Path, grid: str, threshold: int | None = None, count: int = 0) -> None:
    """Compact ``grid`` when ``threshold`` (default :data:`AUTO_COMPACT_FILES`) rows are not
    consolidated yet, unless another process is compacting it (module docstring); every
    ``threshold`` rows, also where files consolidated long enough ago are due for removal
    (:func:`harness.store.layout.remove_due`). ``count``: :func:`arrive`'s count after the
    caller's row (0: unknown, count by listing). Never raises: a compaction that fails costs a
    warning line, and the per-run files stay readable."""
    threshold = AUTO_COMPACT_FILES if threshold is None else threshold
    try:
        if not _wanted(root, grid, threshold, count):
            return
        if BACKGROUND and _handed_over(root, grid):
            return
        from harness.store.compact import compact  # DuckDB: only once rows piled up

        compact(root, grid, wait=False, tiered=True)  # removes what is due too
    except Exception as e:  # the row is written: a failed compaction loses nothing
        line = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        sys.stderr.write(
            f"warning: compacting {grid} by itself failed ({line}); "
            f"'harness compact {grid}' tries again\n"
        )


def _wanted(root: Path, grid: str, threshold: int, count: int) -> bool:
    """Whether to compact now: enough new rows, or files due for removal (checked every
    ``threshold`` rows)."""
    gen = current_generation(root, grid) if count else None
    if gen is not None and gen.arrivals is not None and count >= gen.arrivals:  # else: reset
        new = count - gen.arrivals
        return new >= threshold or (count % threshold == 0 and bool(due(root, grid)))
    total, new = loose_rows(root, grid)
    return new >= threshold or (total >= 2 * threshold and bool(due(root, grid)))


_STARTED: list[subprocess.Popen[bytes]] = []
"""Background compactions this process started (kept to be reaped, not left as zombies)."""


def _handed_over(root: Path, grid: str) -> bool:
    """Start a process that compacts ``grid`` holding its compaction lock, taken here (True
    also when another process holds it: it compacts now); False when no process could be
    started (the caller compacts)."""
    lock = paths.compact_dir(root, grid) / ".lock"
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True  # being compacted
        top = str(Path(harness.__file__).resolve().parent.parent)
        code = f"import sys; sys.path.insert(0, {top!r}); import harness.store.auto as a; a.main()"
        _STARTED[:] = [p for p in _STARTED if p.poll() is None]  # the ended ones reaped
        child = subprocess.Popen(  # this interpreter, this package, fixed arguments
            [sys.executable, "-c", code, str(root), grid, str(fd)],
            pass_fds=(fd,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C meant for the writer does not stop it midway
        )
        _STARTED.append(child)
        return True  # the child's copy of the open file holds the lock now
    except OSError:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def main() -> None:
    """The background compaction (:func:`_handed_over`): ``ROOT GRID FD``, FD an open file
    of the grid's compaction lock, held."""
    root, grid, fd = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    try:
        from harness.store.compact import compact

        compact(root, grid, wait=False, tiered=True, held=True)
    except Exception as e:  # the rows stay readable: say it, and end
        line = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        sys.stderr.write(
            f"warning: compacting {grid} by itself failed ({line}); "
            f"'harness compact {grid}' tries again\n"
        )
    finally:
        os.close(fd)
