"""A live one-line progress display for a batch of runs: done / total, states, ETA."""

from __future__ import annotations

import contextlib
import sys
import time
from collections import Counter
from typing import TextIO


class Progress:
    """Counts finished runs by status and redraws one line (or prints lines when not a TTY)."""

    def __init__(self, total: int, stream: TextIO | None = None, every_s: float = 15.0) -> None:
        self.total, self.stream = total, stream or sys.stderr
        self.start = time.time()
        self.counts: Counter[str] = Counter()
        self.running = 0
        self.every_s = every_s
        self._last_print = 0.0
        self._tty = self.stream.isatty()

    @property
    def done(self) -> int:
        """Runs finished, whatever their status."""
        return sum(self.counts.values())

    def finished(self, status: str) -> None:
        """Record one finished run."""
        self.counts[status] += 1
        self.draw(force=not self._tty)

    def line(self) -> str:
        """The progress line."""
        elapsed = time.time() - self.start
        eta = "?"
        if self.done:
            eta = _fmt(elapsed / self.done * (self.total - self.done))
        states = " ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        return (
            f"[{self.done}/{self.total}] {states or 'none finished'} | running {self.running} | "
            f"elapsed {_fmt(elapsed)} ETA {eta}"
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


def _fmt(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"
