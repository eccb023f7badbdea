"""Live curves: the points of runs being trained, readable while they are written.

A run being trained appends one JSON line per logged point to its live file
(:func:`harness.core.paths.live_path`) with a single ``write`` on a file opened for appending, so
a reader sees whole lines plus at most one partial last line, which it ignores: a run killed
mid-write leaves only complete points. Each line is a loss-curve point (``CURVE_COLUMNS``) plus
``steps`` (the run's planned steps) and ``tokens_per_s``; the last one is the run's heartbeat.
A run that resumes from a checkpoint appends from the checkpoint's step again: a point whose
step is not above the one before it starts a new attempt, and the points it repeats are dropped.
The file is removed once the run's row is written (:func:`retire`; a spilled result written
back too), so a live file means "no row for this attempt yet"; one left beside a finished row
(a process killed between the two) is stale, and readers show the stored curve instead.
Readers only read files: they work wherever the results folder is mounted (SLURM too).

A line is a point only when every field has its type and range (:data:`FIELDS`; any other key,
a tracked metric, holds a number or null): a JSON line written by something else (a hand edit,
another program) is skipped with one warning naming the file, the line and the field, once per
process, and never reaches a reader as a traceback; a line that is not JSON at all (the partial
line of a writer killed mid-write) is skipped silently, as before. The file is left where it
is (a reader does not write, and its run may still be appending to it).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import stat
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core import paths
from harness.core.files import is_locked
from harness.core.result import CURVE_COLUMNS


def append_point(path: Path, point: dict[str, Any]) -> None:
    """Append ``point`` to the live file ``path`` as one complete line (one ``write``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(point, allow_nan=True) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def start_attempt(path: Path) -> None:
    """End a partial last line of ``path`` (left by a process killed mid-write) so that the
    next attempt's first point starts a line of its own."""
    with contextlib.suppress(FileNotFoundError), open(path, "rb+") as fh:
        if fh.seek(0, os.SEEK_END) == 0:
            return
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) != b"\n":
            fh.write(b"\n")


MAX_COUNT = 2**62
"""Upper bound (exclusive) of a count (``step``, ``steps``, ``tokens``): fits a Parquet int64."""


def _count(value: object, *, least: int) -> int | str:
    if type(value) is not int:  # a bool is an int to isinstance, not a count
        return f"expected an integer, got {type(value).__name__} {value!r:.40}"
    if not least <= value < MAX_COUNT:
        return f"expected an integer in [{least}, 2**62), got {value!r:.40}"
    return value


def _number(value: object, *, least: float | None = None) -> float | str | None:
    """A real number (NaN and infinities allowed: a diverged run logs them) or None."""
    if value is None:
        return None
    if type(value) not in (int, float):
        return f"expected a number or null, got {type(value).__name__} {value!r:.40}"
    try:
        number = float(value)  # type: ignore[arg-type]  # int or float, checked above
    except OverflowError:
        return f"expected a number that fits a double, got {value!r:.40}"
    if least is not None and not (math.isnan(number) or number >= least):
        return f"expected a number >= {least:g} or null, got {value!r:.40}"
    return number


Check = Callable[[object], int | float | str | None]
"""A field's check: its value (converted) or why it is refused (a ``str``)."""

FIELDS: dict[str, Check] = {
    "step": lambda v: _count(v, least=0),
    "tokens": lambda v: None if v is None else _count(v, least=0),
    "train_loss": _number,
    "lr": _number,
    "val_loss": _number,
    "elapsed_s": lambda v: _number(v, least=0.0),
    "steps": lambda v: None if v is None else _count(v, least=1),
    "tokens_per_s": lambda v: _number(v, least=0.0),
}
"""Each field of a live line (``CURVE_COLUMNS``, ``steps``, ``tokens_per_s``) and its check;
only ``step`` is required. Any other key is a tracked metric: a number or null (:func:`_number`)."""

assert set(CURVE_COLUMNS) <= set(FIELDS)


TORN = "not JSON"
"""Why a line that does not parse is refused: most often the partial line of a writer killed
mid-write, ended by the next attempt (:func:`start_attempt`), so it is skipped without a word."""


def parse_point(line: bytes) -> dict[str, Any] | str:
    """The point of one live line, its values converted (counts ``int``, the others ``float``
    or None), or why it is not one."""
    try:
        point = json.loads(line)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return TORN
    if not isinstance(point, dict):
        return "not a JSON object"
    if "step" not in point:
        return "no 'step'"
    out: dict[str, Any] = {}
    for key, value in point.items():
        checked = FIELDS.get(key, _number)(value)
        if isinstance(checked, str):
            return f"{key!r} {checked}"
        out[key] = checked
    return out


_WARNED: set[tuple[str, int, int]] = set()
"""(file, line number, hash of the line) already warned about by this process (a view redrawn
every second says it once)."""


def _warn(path: Path, number: int, line: bytes, why: str) -> None:
    key = (str(path), number, hash(line))
    if key not in _WARNED:
        _WARNED.add(key)
        sys.stderr.write(f"warning: {path}: line {number}: {why}; line skipped\n")


MAX_BYTES = 64 * 2**20
"""Most bytes of a live file a reader reads (its tail: the newest points; ~300,000 points)."""


def _read_live(path: Path) -> bytes | None:
    """The bytes of the live file ``path`` (its last :data:`MAX_BYTES`, from a line's start),
    opened without blocking; None, with one warning, when it is not a regular file (a FIFO
    would block the reader, a link to ``/dev/zero`` never end), or when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            _warn_once(path, "not a regular file; skipped (a live file is one the run appends to)")
            return None
        start = max(0, st.st_size - MAX_BYTES)
        os.lseek(fd, start, os.SEEK_SET)
        chunks, left = [], st.st_size - start
        while left > 0 and (chunk := os.read(fd, min(left, 2**20))):
            chunks.append(chunk)
            left -= len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    return data[data.find(b"\n") + 1 :] if start else data  # a cut first line is no point


def _warn_once(path: Path, why: str) -> None:
    key = (str(path), 0, hash(why))
    if key not in _WARNED:
        _WARNED.add(key)
        sys.stderr.write(f"warning: {path}: {why}\n")


def read_points(path: Path) -> list[dict[str, Any]]:
    """The complete points of a live file, the current attempt's (see the module docstring);
    [] when there is none. A line of JSON that is not a valid point is skipped with a warning,
    and so is a file that is not a regular file (:func:`_read_live`)."""
    data = _read_live(path)
    if data is None:
        return []
    lines = data.split(b"\n")[:-1]  # the last piece is '' or a partial line being written
    points: list[dict[str, Any]] = []
    for number, line in enumerate(lines, 1):
        point = parse_point(line)
        if isinstance(point, str):
            if point != TORN:
                _warn(path, number, line, point)
            continue
        while points and points[-1]["step"] >= point["step"]:
            points.pop()  # a resumed attempt repeats these steps
        points.append(point)
    return points


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """Where a run with a live file stands: its last point."""

    run_id: str
    """The run."""
    step: int
    """Steps done."""
    steps: int
    """Steps planned."""
    loss: float
    """Its last logged training loss."""
    tokens_per_s: float | None
    """Its training throughput."""
    tokens_per_step: float
    """Tokens per optimizer step."""
    age_s: float
    """Seconds since its last point."""
    running: bool
    """Whether a live process holds its run lock (False: stopped, or its process is gone)."""

    @property
    def eta_s(self) -> float | None:
        """Seconds to its last step at its current throughput (None: not known yet)."""
        if not self.tokens_per_s or self.step <= 0:
            return None
        eta = max(0, self.steps - self.step) * self.tokens_per_step / self.tokens_per_s
        return eta if math.isfinite(eta) else None


def retire(root: Path, grid: str, run_id: str, *, writer: bool) -> None:
    """Remove the live file of ``run_id``, whose row has just been written: by its run's own
    process (``writer``), or by another (a spilled result written back) unless a live process
    holds the run's lock (a new attempt writes it)."""
    if writer or not is_locked(paths.run_lock_path(root, grid, run_id)):
        paths.live_path(root, grid, run_id).unlink(missing_ok=True)


def live_runs(root: Path, grid: str) -> dict[str, list[dict[str, Any]]]:
    """run_id -> complete points of every run of ``grid`` with a live file."""
    folder = paths.live_dir(root, grid)
    if not folder.is_dir():
        return {}
    out = {p.stem: read_points(p) for p in sorted(folder.glob("*.jsonl"))}
    return {r: pts for r, pts in out.items() if pts}


def heartbeats(root: Path, grid: str) -> list[Heartbeat]:
    """The heartbeat of every run of ``grid`` with a live file, running ones first."""
    now = time.time()
    out = []
    for run_id, points in live_runs(root, grid).items():
        last = points[-1]
        mtime = _mtime(paths.live_path(root, grid, run_id))
        rate = last.get("tokens_per_s")
        out.append(
            Heartbeat(
                run_id,
                int(last["step"]),
                int(last.get("steps") or last["step"]),
                float(last.get("train_loss") or float("nan")),
                float(rate) if rate else None,
                int(last.get("tokens") or 0) / max(1, int(last["step"])),
                max(0.0, now - mtime) if mtime else 0.0,
                is_locked(paths.run_lock_path(root, grid, run_id)),
            )
        )
    return sorted(out, key=lambda h: (not h.running, h.run_id))


def curve_rows(root: Path, grids: list[str]) -> list[dict[str, Any]]:
    """The live points of ``grids`` as ``curves`` rows (``grid``, ``run_id``, ``CURVE_COLUMNS``,
    ``running``)."""
    rows = []
    for grid in grids:
        for run_id, points in live_runs(root, grid).items():
            running = is_locked(paths.run_lock_path(root, grid, run_id))
            for p in points:
                row = {"grid": grid, "run_id": run_id} | {c: p.get(c) for c in CURVE_COLUMNS}
                rows.append(row | {"running": running})
    return rows


def duration(seconds: float) -> str:
    """``4m05s`` or ``2h03m``."""
    s = int(seconds)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None
