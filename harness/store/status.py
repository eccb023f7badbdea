"""``status``: how far a grid has got, from its manifest and result rows."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from harness.core import paths
from harness.core.files import is_locked
from harness.core.result import RESULT_STATUSES, STATUSES
from harness.store.db import open_views
from harness.store.live import Heartbeat, duration, heartbeats


@dataclass(frozen=True, slots=True)
class GridStatus:
    """Counts of a grid's planned runs by state, per scale."""

    grid: str
    """The grid's name."""
    counts: dict[str, Counter[str]]
    """scale -> state -> runs; states are STATUSES plus ``missing`` (planned, no result)."""
    failures: list[tuple[str, str, str]]
    """(run_id, status, first line of the error) of runs that did not complete or diverge."""
    running: int = 0
    """Planned runs being trained now: a live process holds their run lock (counted above by
    their previous row, or as missing)."""
    live: tuple[Heartbeat, ...] = ()
    """Runs with a live curve (being trained, or stopped before their row): where each stands."""
    scale_name: str = ""
    """How the program that planned the grid names its scale (:func:`harness.core.paths.
    scale_name_path`: ``harness bench``'s ``local scale``); empty: none recorded."""


def grid_status(root: Path, grid: str) -> GridStatus:
    """Counts of ``grid``'s planned runs by state (``missing``: planned, no row yet)."""
    con = open_views(root, grid, views=("runs", "manifest")).con  # no curves: not read
    rows = con.execute(
        "SELECT m.scale, coalesce(r.status, 'missing'), count(*) FROM manifest m "
        "LEFT JOIN runs r USING (run_id) GROUP BY ALL"
    ).fetchall()
    counts: dict[str, Counter[str]] = {}
    for scale, status, n in rows:
        counts.setdefault(scale, Counter())[status] = n
    fails = con.execute(
        "SELECT run_id, status, split_part(coalesce(error, ''), chr(10), 1) FROM runs "
        f"WHERE status NOT IN {tuple(RESULT_STATUSES)} ORDER BY run_id"
    ).fetchall()
    beats = heartbeats(root, grid)
    # the planned and the rowed run_ids (100,000 of each into Python at 100,000 runs: half a
    # second of CPU) only where a lock file or a live file asks about them
    locks = paths.locks_dir(root, grid)
    asked = bool(beats) or _any_file(locks)
    planned = (
        {r for (r,) in con.execute("SELECT run_id FROM manifest").fetchall()} if asked else set()
    )
    running = len(training_now(root, grid, planned))
    rowed = {r for (r,) in con.execute("SELECT run_id FROM runs").fetchall()} if beats else set()
    # a live file beside a row, no process on it: left behind (its row says where the run is)
    live = tuple(h for h in beats if h.run_id in planned and (h.running or h.run_id not in rowed))
    named = _scale_name(root, grid)
    return GridStatus(grid, counts, [tuple(f) for f in fails], running, live, named)


def _scale_name(root: Path, grid: str) -> str:
    """The grid's recorded scale name (:func:`harness.core.paths.scale_name_path`), or ""."""
    try:
        return paths.scale_name_path(root, grid).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return ""


def _any_file(folder: Path) -> bool:
    """Whether ``folder`` exists and holds anything."""
    try:
        with os.scandir(folder) as entries:
            return any(True for _ in entries)
    except (FileNotFoundError, NotADirectoryError):
        return False


def training_now(root: Path, grid: str, run_ids: Iterable[str]) -> set[str]:
    """The runs among ``run_ids`` whose run lock a live process holds (being trained now).

    The locks folder is listed once and only the runs with a lock file there are tried, so the
    cost grows with the lock files, not with the runs asked about (100,000 planned runs were
    100,000 failed opens: 1.6 s of CPU per ``status``)."""
    folder = paths.locks_dir(root, grid)
    try:
        names = {e.name for e in os.scandir(folder)}
    except (FileNotFoundError, NotADirectoryError):
        return set()
    return {
        r
        for r in run_ids
        if paths.run_lock_name(r) in names and is_locked(folder / paths.run_lock_name(r))
    }


LIVE_LINES = 20
"""Live runs listed by :func:`format_status`."""


def format_heartbeat(h: Heartbeat) -> str:
    """One line of a live run: step, loss, throughput, ETA, age of its last point."""
    state = "running" if h.running else "stopped"
    rate = f"{h.tokens_per_s:,.0f} tok/s" if h.tokens_per_s else "? tok/s"
    eta = duration(h.eta_s) if h.eta_s is not None and h.running else "?"
    return (
        f"  {state:9} {h.run_id}  step {h.step}/{h.steps}  loss {h.loss:.4f}  {rate}  "
        f"ETA {eta}  last point {duration(h.age_s)} ago"
    )


def format_status(s: GridStatus) -> str:
    """A table of counts per scale, then the failures with their reasons."""
    states = [*STATUSES, "missing"]
    lines = [f"grid {s.grid}"]
    if s.scale_name:  # harness bench: its runs' scale field says full (the grid as written)
        lines = [f"grid {s.grid} ({s.scale_name}; the runs' scale field: the grid as written)"]
    header = f"{'scale':8}" + "".join(f"{st:>11}" for st in [*states, "total"])
    lines.append(header)
    for scale, c in sorted(s.counts.items()):
        total = sum(c.values())
        lines.append(
            f"{scale:8}" + "".join(f"{c.get(st, 0):>11}" for st in states) + f"{total:>11}"
        )
    if s.running:
        lines.append(f"running now: {s.running} (a live process holds each one's run lock)")
    lines += [format_heartbeat(h) for h in s.live[:LIVE_LINES]]
    if len(s.live) > LIVE_LINES:
        lines.append(f"  ... and {len(s.live) - LIVE_LINES} more live runs")
    for run_id, status, reason in s.failures[:20]:
        lines.append(f"  {status:9} {run_id}  {reason[:150]}")
    if len(s.failures) > 20:
        lines.append(f"  ... and {len(s.failures) - 20} more failures")
    return "\n".join(lines)
