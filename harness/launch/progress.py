"""A live one-line progress display for a batch of runs: done / total, states, ETA, and the best
validation loss so far; inside :func:`whole` (a command of several batches, the bench's phases)
also the runs and the ETA of the whole."""

from __future__ import annotations

import contextlib
import math
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from harness.core.result import Status
from harness.store.live import duration


@dataclass(slots=True)
class Whole:
    """The batches of one command counted together (:func:`whole`)."""

    name: str
    """What the whole is called in the line (``bench``)."""
    most: int
    """Most runs still to train in every batch together (an upper bound: later batches are
    planned from earlier results)."""
    start: float = field(default_factory=time.time)
    """When it began (epoch seconds)."""
    done: int = 0
    """Runs finished in its batches so far."""

    def line(self) -> str:
        """``bench: 3 of at most 104 runs, ETA 40m for every phase (at most)``."""
        eta = "?"
        if self.done:
            left = max(self.most - self.done, 0)
            eta = duration((time.time() - self.start) / self.done * left)
        return (
            f"{self.name}: {self.done} of at most {self.most} runs, ETA {eta} for every phase "
            "(at most)"
        )


_WHOLE: ContextVar[Whole | None] = ContextVar("harness_progress_whole", default=None)


@contextlib.contextmanager
def whole(name: str, most: int) -> Iterator[Whole]:
    """Count every batch's progress started inside toward one whole of at most ``most`` runs,
    shown on each progress line with its ETA (the bench's phases: one ETA for the bench)."""
    counted = Whole(name, most)
    token = _WHOLE.set(counted)
    try:
        yield counted
    finally:
        _WHOLE.reset(token)


class Progress:
    """Counts finished runs by status and redraws one line (or prints lines when not a TTY)."""

    def __init__(self, total: int, stream: TextIO | None = None, every_s: float = 15.0) -> None:
        self.total, self.stream = total, stream or sys.stderr
        self.start = time.time()
        self.counts: Counter[str] = Counter()
        self.running = 0
        self.best: float | None = None
        """The lowest validation loss of a completed run so far."""
        self.every_s = every_s
        self._last_print = 0.0
        self._tty = self.stream.isatty()
        self.whole = _WHOLE.get()
        """The command's whole this batch counts toward (None: the batch is the whole)."""

    @property
    def done(self) -> int:
        """Runs finished, whatever their status."""
        return sum(self.counts.values())

    def finished(self, status: Status, val_loss: float | None = None) -> None:
        """Record one finished run (``val_loss``: its validation loss, when it has one)."""
        self.counts[status] += 1
        if self.whole is not None:
            self.whole.done += 1
        if status == Status.COMPLETED and val_loss is not None and math.isfinite(val_loss):
            self.best = val_loss if self.best is None else min(self.best, val_loss)
        self.draw(force=not self._tty)

    def line(self) -> str:
        """The progress line."""
        elapsed = time.time() - self.start
        eta = "?"
        if self.done:
            eta = duration(elapsed / self.done * (self.total - self.done))
        states = " ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        return (
            f"[{self.done}/{self.total}] {states or 'none finished'} | running {self.running} | "
            f"elapsed {duration(elapsed)} ETA {eta}"
            + (f" | best val_loss {self.best:.4f}" if self.best is not None else "")
            + (f" | {self.whole.line()}" if self.whole is not None else "")
        )

    def draw(self, force: bool = False) -> None:
        """Redraw (TTY) or print a line at most every ``every_s`` seconds (logs); a terminal
        gone (SIGHUP) silences it."""
        with contextlib.suppress(OSError):
            self._draw(force)

    def _draw(self, force: bool) -> None:
        now = time.time()
        if self._tty:
            self.stream.write("\r\033[K" + self.line())
            self.stream.flush()
        elif force or now - self._last_print >= self.every_s:
            self.stream.write(self.line() + "\n")
            self.stream.flush()
            self._last_print = now

    def close(self) -> None:
        """Final line."""
        with contextlib.suppress(OSError):
            self._close()

    def _close(self) -> None:
        if self._tty:
            self.stream.write("\r\033[K")
        self.stream.write(self.line() + "\n")
        self.stream.flush()


def val_loss_of(root: Path, grid: str, run_id: str) -> float | None:
    """The validation loss in a run's row file (None: none, or unreadable)."""
    from harness.store.rows import newest_row_file, read_row  # Arrow: only once runs finish

    path = newest_row_file(root, grid, run_id)
    try:
        value = read_row(path).get("val_loss") if path is not None else None
    except (OSError, ValueError, IndexError):
        return None
    return float(value) if isinstance(value, int | float) else None
