"""Which of a grid's result files a reader reads, and when the files a compaction covered go.

Per-run files are written once, under a name of their own (``<run_id>.<version>.parquet``,
:func:`harness.core.paths.run_path`), and never replaced: a reader sees the whole old file or the
whole new one, never half of either. A run retried writes a new version beside the old.

A compaction (:mod:`harness.store.compact`) writes generation N: a new part (``runs-N``, then
``curves-N``), then ``covered-N.json``: the per-run files it holds and its parts (its own and
the older parts it keeps). A generation is complete once its covered list exists. A reader
reads the newest complete generation's parts and the per-run files it does not cover; for
curves, only the newest version of each run's file, else the newest part holding the run. Files
a generation covers, and parts it no longer holds, stay on disk :data:`GRACE_S` after it
completed, so that a reader that listed them before it completed never meets a vanished file;
the next compaction (or ``harness clean``) removes them (:func:`remove_due`). A covered list is
read once per process (cached by its modification time and size: it is never rewritten): what
says which parts a generation has is kept for every list read, the files it covers (the bulk:
tens of thousands of names within :data:`GRACE_S` of a sweep) for the last few only
(:data:`FILES_CACHED`), and read only where asked (:attr:`Generation.covered`). A writer asks
the generation at every row while a sweep keeps a hundred lists within the grace: a cache that
forgot them all at 64 read every list at every row (2.3 s of CPU per row with 66 lists of
28,000 runs; the spike windows of RESULTS §10.4).

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
from functools import cached_property
from pathlib import Path
from typing import Any

from harness.core import paths
from harness.core.errors import UserError
from harness.core.files import atomic_write_text
from harness.core.stamped import Stamp, StampedCache

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
class Part:
    """One file pair of a generation: a generation is the sum of its parts (:mod:`harness.store.
    tiers` says which a compaction merges), each written by the compaction of its number."""

    number: int
    """The generation that wrote it (its files are ``runs-<number>`` and ``curves-<number>``)."""
    runs: Path | None
    """Its result rows (None: it has none, or they were moved aside as corrupt)."""
    curves: Path | None
    """Its loss curves (None: it has none, or they were moved aside as corrupt)."""
    rows: int | None
    """Result rows in it (its size tier); None where not recorded (an earlier harness's)."""
    shadows: frozenset[str]
    """Runs whose curve points in older parts this one supersedes (a retried run: its curve of
    a later attempt); readers take a run's points from the newest part that holds them."""
    kinds: frozenset[str]
    """The kinds of file (:data:`~harness.core.paths.GENERATION_KINDS`) it was written with: one
    missing on disk was moved aside."""


@dataclass(frozen=True)
class Generation:
    """One consolidated generation of a grid (:mod:`harness.store.compact`): its parts, oldest
    first (one, written by itself, where it merged everything or was written by an earlier
    harness)."""

    number: int
    """Its number (generations sort by it)."""
    parts: tuple[Part, ...]
    """The file pairs that together hold its rows and curves, oldest first."""
    listing: Path | None
    """Its covered list (None: written before covered lists existed): :attr:`covered` reads
    the files it names when first asked."""
    completed_at: float | None
    """When its covered list was written (seconds since the epoch); None without one."""
    arrivals: int | None = None
    """Rows written to the grid (:func:`arrivals`) when its compaction listed the per-run files;
    None where not recorded."""

    @cached_property
    def covered(self) -> frozenset[str]:
        """The per-run files it holds, relative to the grid's folder (empty: written before
        covered lists existed, or its list is gone)."""
        return _covered_files(self.listing) if self.listing is not None else frozenset()

    @property
    def runs(self) -> tuple[Path, ...]:
        """Its files of result rows, oldest first."""
        return tuple(p.runs for p in self.parts if p.runs is not None)

    @property
    def curves(self) -> tuple[tuple[Path, frozenset[str]], ...]:
        """Its files of loss curves with their :attr:`Part.shadows`, oldest first."""
        return tuple((p.curves, p.shadows) for p in self.parts if p.curves is not None)

    def holds(self, kind: str) -> bool:
        """Whether its parts hold every file of ``kind`` they were written with, and one at
        least (else readers read every per-run file of that kind too)."""
        files = self.runs if kind == "runs" else self.curves
        lost = any(
            kind in p.kinds and (p.runs if kind == "runs" else p.curves) is None for p in self.parts
        )
        return bool(files) and not lost


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
        return [*self.rows, *(self.generation.runs if self.generation else ())]

    @property
    def curve_parts(self) -> tuple[tuple[Path, frozenset[str]], ...]:
        """The generation's curve files with the runs each supersedes (:attr:`Generation.
        curves`; none: no generation)."""
        return self.generation.curves if self.generation else ()


def loose(folder: Path) -> list[Path]:
    """The per-run files of ``folder`` (``*.parquet``), sorted by name; none for a missing
    folder. Temporary files of writers (hidden names) never match."""
    return [folder / n for n in loose_names(folder)]


def loose_names(folder: Path) -> list[str]:
    """The names of :func:`loose`, no path made (a compaction lists tens of thousands of files
    within the grace several times: a path each cost it 0.7 s of CPU at 99,000 runs)."""
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(n for n in names if paths.is_per_run_file(n))


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


FILES_CACHED = 4
"""Covered lists whose files a process keeps (the current generation's, the one a removal reads,
and the one before each): every list's parts are kept, its files only for these."""


@dataclass(frozen=True, slots=True)
class _Head:
    """What a covered list says of its generation but the files (:func:`write_covered`)."""

    parts: tuple[dict[str, Any], ...] | None
    arrivals: int | None
    mtime: float


HEADS_CACHED = 4096
"""Heads kept (small: a few parts each; a grid has about 100 lists within the grace)."""

_HEADS: StampedCache[_Head] = StampedCache(HEADS_CACHED)
"""Covered lists' heads read by this process: a list is written once and never changed, so a
process that reads a grid again (a worker writing row after row) reads each once, and without
its files (:func:`_read_head`)."""

_FILES: StampedCache[frozenset[str]] = StampedCache(FILES_CACHED)
"""The files of the last :data:`FILES_CACHED` covered lists read."""


def _key(path: Path) -> tuple[Stamp, float] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size), st.st_mtime


HEAD_FORMAT = 2
"""``format`` of a covered list that :func:`write_covered` writes with its files last, so that
its head is read without the files (:func:`_read_head`); a list without it (an earlier
harness's: files first) is read whole."""

HEAD_BYTES = 65_536
"""Bytes of a covered list read for its head; a longer head (parts superseding many runs) is
read with the whole list."""

_FILES_KEY = b', "files": '


def _read_covered(path: Path) -> dict[str, Any] | None:
    """A covered list's document; None when it is gone or not JSON."""
    try:
        with open(path) as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _read_head(path: Path) -> tuple[dict[str, Any] | None, bool]:
    """(the covered list's document but its files where it puts them last, else the whole
    document; whether that is the whole document)."""
    try:
        with open(path, "rb") as fh:
            start = fh.read(HEAD_BYTES)
    except OSError:
        return None, True
    cut = start.find(_FILES_KEY)
    if cut > 0:
        with contextlib.suppress(ValueError):
            head = json.loads(start[:cut] + b"}")
            if isinstance(head, dict) and head.get("format") == HEAD_FORMAT:
                return head, False
    return _read_covered(path), True


def _head(path: Path) -> _Head | None:
    """The head of the covered list at ``path`` (None: none there, or not readable)."""
    found = _key(path)
    if found is None:
        return None
    key, mtime = found
    cached = _HEADS.get(path, key)
    if cached is not None:
        return cached
    doc, whole = _read_head(path)
    if doc is None:
        return None
    parts, arrivals = doc.get("parts"), doc.get("arrivals")
    head = _Head(
        tuple(parts) if isinstance(parts, list) else None,
        arrivals if isinstance(arrivals, int) else None,
        mtime,
    )
    _HEADS.put(path, key, head)
    if whole:  # read anyway
        _keep_files(path, key, doc)
    return head


def _keep_files(path: Path, key: Stamp, doc: dict[str, Any]) -> frozenset[str]:
    return _FILES.put(path, key, frozenset(str(f) for f in doc.get("files", [])))


def _covered_files(path: Path) -> frozenset[str]:
    """The per-run files the covered list at ``path`` names (empty: gone, or not readable)."""
    found = _key(path)
    if found is None:
        return frozenset()
    key = found[0]
    cached = _FILES.get(path, key)
    if cached is not None:
        return cached
    doc = _read_covered(path)
    return frozenset() if doc is None else _keep_files(path, key, doc)


@dataclass(frozen=True, slots=True)
class _Listing:
    """The generation files in a grid's ``compact/`` folder, by name (a path is made for the
    parts asked for only: a writer lists the folder, hundreds of files within the grace, at
    every row)."""

    folder: Path
    names: dict[int, dict[str, str]]
    """Generation number -> kind -> file name."""

    def file(self, number: int, kind: str) -> Path | None:
        name = self.names.get(number, {}).get(kind)
        return self.folder / name if name is not None else None


def _parts(number: int, doc: _Head | None, files: _Listing) -> list[Part]:
    """The parts of generation ``number`` (its covered list ``doc``; ``files``: the generation
    files on disk). A list without parts (an earlier harness's): one part, the generation's
    own files."""
    if doc is None or doc.parts is None:
        kinds = frozenset(files.names.get(number, {}))
        runs, curves = files.file(number, "runs"), files.file(number, "curves")
        return [Part(number, runs, curves, None, frozenset(), kinds)]
    out = []
    for d in doc.parts:
        n = int(d["number"])
        rows = d.get("rows")
        out.append(
            Part(
                n,
                files.file(n, "runs"),
                files.file(n, "curves"),
                int(rows) if rows is not None else None,
                frozenset(str(r) for r in d.get("shadows", [])),
                frozenset(str(k) for k in d.get("kinds", paths.GENERATION_KINDS)),
            )
        )
    return out


def _by_number(root: Path, grid: str) -> _Listing:
    """The generation files on disk (one listing of the folder)."""
    folder = paths.compact_dir(root, grid)
    by_number: dict[int, dict[str, str]] = {}
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        names = []
    for name in names:
        found = paths.generation_of_name(name)
        if found:
            by_number.setdefault(found[1], {})[found[0]] = name
    return _Listing(folder, by_number)


def _generation(root: Path, grid: str, n: int, by_number: _Listing) -> Generation:
    listing = paths.covered_path(root, grid, n)
    doc = _head(listing)
    return Generation(
        n,
        tuple(_parts(n, doc, by_number)),
        listing if doc else None,
        doc.mtime if doc else None,
        doc.arrivals if doc else None,
    )


def generations(root: Path, grid: str) -> tuple[list[Generation], list[Generation]]:
    """(complete, incomplete) generations of ``grid``, oldest first; an incomplete one has no
    covered list (written before they existed, by a compaction that is running or died, or a
    part of a newer generation whose own list was removed)."""
    by_number = _by_number(root, grid)
    complete: list[Generation] = []
    incomplete: list[Generation] = []
    for n in sorted(by_number.names):
        gen = _generation(root, grid, n, by_number)
        (complete if gen.listing else incomplete).append(gen)
    return complete, incomplete


def current_generation(root: Path, grid: str) -> Generation | None:
    """The generation readers read: the newest complete one, or, where no generation has a
    covered list (written by an earlier harness), the newest file of each kind. Reads the
    newest lists only, down to the first complete one."""
    by_number = _by_number(root, grid)
    incomplete: list[Generation] = []
    for n in sorted(by_number.names, reverse=True):
        gen = _generation(root, grid, n, by_number)
        if gen.listing:
            return gen
        incomplete.insert(0, gen)
    if not incomplete:
        return None
    runs = [p.runs for g in incomplete for p in g.parts if p.runs is not None]
    curves = [p.curves for g in incomplete for p in g.parts if p.curves is not None]
    kinds = frozenset(k for k, f in (("runs", runs), ("curves", curves)) if f)
    last = Part(
        incomplete[-1].number,
        runs[-1] if runs else None,
        curves[-1] if curves else None,
        None,
        frozenset(),
        kinds,
    )
    return Generation(incomplete[-1].number, (last,), None, None)


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
    one when it holds no file of that kind (or one of its parts lost it)."""
    folder = paths.runs_dir(root, grid) if kind == "runs" else paths.curves_dir(root, grid)
    names = loose_names(folder)
    if gen is None or not gen.covered or not gen.holds(kind):
        return [folder / n for n in names]
    covered = gen.covered
    return [folder / n for n in names if f"{kind}/{n}" not in covered]


def write_covered(
    root: Path,
    grid: str,
    number: int,
    files: list[str],
    parts: list[dict[str, Any]] | None = None,
    arrivals: int | None = None,
) -> None:
    """Write generation ``number``'s covered list (``files``: relative to the grid's folder;
    ``parts``: oldest first, each ``{"number", "rows", "shadows", "kinds"}``, default: its own
    files only; ``arrivals``: :func:`arrivals` when its per-run files were listed); this
    completes it."""
    path = paths.covered_path(root, grid, number)
    doc: dict[str, Any] = {"generation": number, "format": HEAD_FORMAT}
    if parts is not None:
        doc["parts"] = parts
    if arrivals is not None:
        doc["arrivals"] = arrivals
    doc["files"] = sorted(files)  # last: its head is read without them (:func:`_read_head`)
    atomic_write_text(path, json.dumps(doc))


def due(root: Path, grid: str, now: float | None = None) -> list[Path]:
    """The files a removal may take now (``now``: seconds since the epoch; default: now): those
    covered by the newest generation completed at least :data:`GRACE_S` ago, the generations
    (and covered lists) older than it that are no part of it or of a newer one, and generations
    without a covered list newer than it untouched that long (left by a compaction that died).
    Nothing where no generation has a covered list (an earlier harness's)."""
    now = time.time() if now is None else now
    grace_s = GRACE_S
    complete, incomplete = generations(root, grid)
    aged = [g for g in complete if g.completed_at is not None and now - g.completed_at >= grace_s]
    if not aged:
        return []
    keep = aged[-1]
    live = {p.number for g in complete if g.number >= keep.number for p in g.parts}
    folder = paths.grid_dir(root, grid)
    out = [folder / f for f in sorted(keep.covered)]
    for g in [*complete, *incomplete]:
        if g.number < keep.number and g.completed_at is not None:
            out.append(paths.covered_path(root, grid, g.number))
        if g.number in live:
            continue
        files = [paths.generation_path(root, grid, k, g.number) for k in paths.GENERATION_KINDS]
        files = [p for p in files if p.exists()]
        if g.number < keep.number or (
            g.completed_at is None and all(_age(p, now) >= grace_s for p in files)
        ):
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
