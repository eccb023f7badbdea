"""A small file system of its own for a test (a tmpfs): to fill it, or to make it read-only.

Mounting needs root. Elsewhere the test is skipped with the reason; under ``CI=true`` it fails
instead (CI runs as root, so a failure to mount there is a broken environment, not a skip).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(f"{reason} (CI=true: file-system fault tests must run, never skip)")
    pytest.skip(reason)


@contextlib.contextmanager
def tmpfs(folder: Path, size_mb: int) -> Iterator[Path]:
    """Mount a ``size_mb`` MB tmpfs at ``folder`` for the ``with`` block."""
    if os.geteuid() != 0:
        _unavailable("mounting a small tmpfs needs root")
    folder.mkdir(parents=True, exist_ok=True)
    mount = ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(folder)]
    done = subprocess.run(mount, capture_output=True, text=True)
    if done.returncode != 0:
        _unavailable(f"cannot mount a tmpfs: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def fill(folder: Path) -> Path:
    """Write a file in ``folder`` until its file system has no space left; returns it."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for size in (1 << 20, 65536, 4096, 512, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)
    return filler


@contextlib.contextmanager
def kept_full(folder: Path, every_s: float = 0.01) -> Iterator[Path]:
    """:func:`fill` ``folder``'s file system, and fill it again every ``every_s`` for the ``with``
    block (a writer whose write failed removes its partial file: a checkpoint's temporary file
    freed megabytes once, and the rows that should have found a full disk were written);
    yields the filler file."""
    filler = fill(folder)
    done = threading.Event()

    def refill() -> None:
        while not done.wait(every_s):
            fill(folder)

    thread = threading.Thread(target=refill, daemon=True)
    thread.start()
    try:
        yield filler
    finally:
        done.set()
        thread.join()


def read_only(folder: Path) -> None:
    """Remount the tmpfs at ``folder`` read-only."""
    subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True, capture_output=True)
