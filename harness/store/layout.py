"""Which of a grid's result files a reader reads, and when the files a compaction covered go.

Per-run files are written once, under a name of their own (``<run_id>.<version>.parquet``,
:func:`harness.core.paths.run_path`), and never replaced: a reader sees the whole old file or the
whole new one, never half of either. A run retried writes a new version beside the old.

A compaction (:mod:`harness.store.compact`) writes generation N (``runs-N``, then ``curves-N``),
then ``covered-N.json``: the per-run files and older generations it holds. A generation is
complete once its covered list exists. A reader reads the newest complete generation and the
per-run files it does not cover; for curves, only the newest version of each run's file. Files a
generation covers, and older generations, stay on disk :data:`GRACE_S` after it completed, so
that a reader that listed them before it completed never meets a vanished file; the next
compaction (or ``harness clean``) removes them (:func:`remove_due`).

Results folders written before covered lists existed have none: there the newest generation of
each kind is read with every per-run file, as before (the views of :mod:`harness.store.db`
resolve a run present in both).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from harness.core import paths
from harness.core.errors import UserError
from harness.core.files import atomic_write_text

GRACE_S = 600.0
"""Seconds a compaction's covered files (and the generations it supersedes) stay after it
completed: longer than any read of the files listed before it (a query, ``status``, a figure)."""


def require_grid(root: Path, grid: str) -> None:
    """Nothing when ``grid`` has results under ``root``.

    Raises:
        UserError: it has none (names the grids that do).
    """
    grids = paths.grids_in(root)
    if grid not in grids:
        known = ", ".join(grids) or "none"
        raise UserError(f"no results for grid {grid!r} under {root}; grids there: {known}")


@dataclass(frozen=True, slots=True)
class Generation:
    """One consolidated generation of a grid (:mod:`harness.store.compact`)."""

    number: int
    """Its number (generations sort by it)."""
    runs: Path | None
    """Its result rows (None: it has none)."""
    curves: Path | None
    """Its loss curves (None: it has none)."""
    covered: frozenset[str]
    """The per-run files it holds, relative to the grid's folder (empty: written before covered
    lists existed)."""
    completed_at: float | None
    """When its covered list was written (seconds since the epoch); None without one."""


@dataclass(frozen=True, slots=True)
class GridFiles:
    """The files of one grid a reader reads now."""

    generation: Generation | None
    """The newest complete generation (or, without covered lists, the newest of each kind)."""
    rows: tuple[Path, ...]
    """Per-run row files it does not cover (every version: the ``runs`` view shows the newest
    row of each run)."""
    curves: tuple[Path, ...]
    """Per-run curve files it does not cover: the newest version of each run's."""

    @property
    def all_rows(self) -> list[Path]:
        """Every file holding rows a reader reads: :attr:`rows`, then the generation's."""
        gen = self.generation.runs if self.generation else None
        return [*self.rows, *([gen] if gen is not None else [])]

    @property
    def curve_generation(self) -> Path | None:
        """The generation's curves (None: none)."""
        return self.generation.curves if self.generation else None


def loose(folder: Path) -> list[Path]:
    """The per-run files of ``folder`` (``*.parquet``), sorted by name; none for a missing
    folder. Temporary files of writers (hidden names) never match."""
    try:
        names = [e.name for e in os.scandir(folder)]
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [folder / n for n in sorted(names) if paths.is_per_run_file(n)]


def newest_per_run(files: list[Path]) -> list[Path]:
    """The newest version of each run's file among ``files`` (per-run files, :func:`loose`);
    files of another name (an import's) are kept."""
    best: dict[str, tuple[str, Path]] = {}
    out: list[Path] = []
    for p in files:
        run_id, version = paths.per_run_name(p)
        if run_id.startswith("import-"):
            out.append(p)
        elif run_id not in best or version > best[run_id][0]:
            best[run_id] = (version, p)
    return out + [p for _, p in best.values()]


def _covered(path: Path) -> tuple[frozenset[str], float] | None:
    try:
        with open(path) as fh:
            doc = json.load(fh)
            mtime = os.fstat(fh.fileno()).st_mtime
    except (OSError, ValueError):
        return None
    return frozenset(str(f) for f in doc.get("files", [])), mtime


def generations(root: Path, grid: str) -> tuple[list[Generation], list[Generation]]:
    """(complete, incomplete) generations of ``grid``, oldest first; an incomplete one has no
    covered list (written before they existed, or by a compaction that is running or died)."""
    by_number: dict[int, dict[str, Path]] = {}
    for kind in paths.GENERATION_KINDS:
        for p in paths.generations(root, grid, kind):
            found = paths.generation_of(p)
            if found:
                by_number.setdefault(found[1], {})[kind] = p
    complete: list[Generation] = []
    incomplete: list[Generation] = []
    for n, files in sorted(by_number.items()):
        covered = _covered(paths.covered_path(root, grid, n))
        gen = Generation(
            n,
            files.get("runs"),
            files.get("curves"),
            covered[0] if covered else frozenset(),
            covered[1] if covered else None,
        )
        (complete if covered else incomplete).append(gen)
    return complete, incomplete


def current_generation(root: Path, grid: str) -> Generation | None:
    """The generation readers read: the newest complete one, or, where no generation has a
    covered list (written by an earlier harness), the newest file of each kind."""
    complete, incomplete = generations(root, grid)
    if complete:
        return complete[-1]
    if not incomplete:
        return None
    runs = [g.runs for g in incomplete if g.runs is not None]
    curves = [g.curves for g in incomplete if g.curves is not None]
    return Generation(
        incomplete[-1].number,
        runs[-1] if runs else None,
        curves[-1] if curves else None,
        frozenset(),
        None,
    )


def grid_files(root: Path, grid: str) -> GridFiles:
    """The files of ``grid`` a reader reads now (module docstring). The generation is chosen
    before the per-run files are listed, so a compaction completing in between covers files
    the listing then still holds (read twice, resolved by the views), never none. Where the
    generation lacks its rows or curves (moved aside as corrupt), the per-run files it covered
    that are still there are read instead."""
    gen = current_generation(root, grid)
    rows = uncovered(root, grid, gen, "runs")
    curves = newest_per_run(uncovered(root, grid, gen, "curves"))
    return GridFiles(gen, tuple(rows), tuple(curves))


def uncovered(root: Path, grid: str, gen: Generation | None, kind: str) -> list[Path]:
    """The per-run files of ``kind`` (``runs`` or ``curves``) that ``gen`` does not hold: every
    one when it has no file of that kind."""
    folder = paths.runs_dir(root, grid) if kind == "runs" else paths.curves_dir(root, grid)
    files = loose(folder)
    holds = gen is not None and (gen.runs if kind == "runs" else gen.curves) is not None
    if not holds or gen is None or not gen.covered:
        return files
    top = paths.grid_dir(root, grid)
    return [p for p in files if str(p.relative_to(top)) not in gen.covered]


def write_covered(root: Path, grid: str, number: int, files: list[str]) -> None:
    """Write generation ``number``'s covered list (``files``: relative to the grid's folder);
    this completes it."""
    path = paths.covered_path(root, grid, number)
    atomic_write_text(path, json.dumps({"generation": number, "files": sorted(files)}))


def due(root: Path, grid: str, now: float | None = None) -> list[Path]:
    """The files a removal may take now (``now``: seconds since the epoch; default: now): those
    covered by the newest generation completed at least :data:`GRACE_S` ago, the generations
    (and covered lists) older than it, and generations without a covered list newer than it
    untouched that long (left by a compaction that died). Nothing where no generation has a
    covered list (an earlier harness's)."""
    now = time.time() if now is None else now
    grace_s = GRACE_S
    complete, incomplete = generations(root, grid)
    aged = [g for g in complete if g.completed_at is not None and now - g.completed_at >= grace_s]
    if not aged:
        return []
    keep = aged[-1]
    folder = paths.grid_dir(root, grid)
    out = [folder / f for f in sorted(keep.covered)]
    for g in [*complete, *incomplete]:
        files = [p for p in (g.runs, g.curves) if p is not None]
        if g.number < keep.number:
            out += files
            if g.completed_at is not None:
                out.append(paths.covered_path(root, grid, g.number))
        elif g.completed_at is None and all(_age(p, now) >= grace_s for p in files):
            out += files
    return [p for p in out if p.exists()]


def _age(path: Path, now: float) -> float:
    try:
        return now - path.stat().st_mtime
    except FileNotFoundError:
        return float("inf")


def remove_due(root: Path, grid: str, now: float | None = None) -> int:
    """Remove the files :func:`due` names; the caller holds the grid's compaction lock.
    Returns how many were removed."""
    removed = 0
    for p in due(root, grid, now):
        with contextlib.suppress(FileNotFoundError):
            p.unlink()
            removed += 1
    return removed
