"""The record of the per-run files as their writers wrote them: ``<grid>/.written``, one line
per file (its path in the grid's folder, size and SHA-256), appended by the writer
(:func:`record`), which hashes the bytes it writes before they reach the disk (it read each
file back to hash it: a second read per file of every row written). The integrity check
(:mod:`harness.store.integrity`) compares a new file's bytes with its line instead of decoding
every page; a compaction drops the lines of the files it covered (:func:`trim`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

from harness.core import paths
from harness.core.files import atomic_write_text

FileDigest = tuple[int, str]
"""A file's size in bytes and SHA-256 (hex), as its writer wrote it."""


def digest(data: bytes) -> FileDigest:
    """The :data:`FileDigest` of a file's bytes (computed by the writer before they reach the
    disk: it reads nothing back)."""
    return len(data), hashlib.sha256(data).hexdigest()


def record(root: Path, grid: str, files: Mapping[Path, FileDigest]) -> None:
    """Append the size and SHA-256 of ``files`` (per-run files of ``grid`` just written, whole,
    with the digest of the bytes written: :func:`digest`) to the grid's record of written files,
    in one write: the first reader then compares their bytes instead of decoding them
    (:mod:`harness.store.integrity`). A record that cannot be written costs that reader the
    full check, nothing else."""
    folder = paths.grid_dir(root, grid)
    with contextlib.suppress(OSError):  # the files are written: a record is only a saving
        lines = []
        for path, (size, sha256) in files.items():
            rel = path.relative_to(folder).as_posix()
            lines.append(f"{rel}\t{size}\t{sha256}\n")
        fd = os.open(paths.written_path(root, grid), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, "".join(lines).encode())
        finally:
            os.close(fd)


def read(root: Path, grid: str) -> dict[str, tuple[int, str]]:
    """The record of :func:`record`: file (relative to the grid's folder) -> (size,
    SHA-256); lines that do not parse are left out (their files are read in full)."""
    out: dict[str, tuple[int, str]] = {}
    with contextlib.suppress(OSError, UnicodeDecodeError):
        for line in paths.written_path(root, grid).read_text().splitlines():
            parts = line.split("\t")
            if len(parts) == 3 and parts[1].isdigit() and len(parts[2]) == 64:
                out[parts[0]] = (int(parts[1]), parts[2])
    return out


def trim(root: Path, grid: str, covered: frozenset[str]) -> None:
    """Drop the lines of the files a generation ``covered`` from the grid's record of written
    files (the caller holds the compaction lock). A line a writer appends meanwhile may be
    lost: its file is then read in full by the first reader, as before the record."""
    path = paths.written_path(root, grid)
    kept = {k: v for k, v in read(root, grid).items() if k not in covered}
    with contextlib.suppress(OSError):
        atomic_write_text(path, "".join(f"{k}\t{n}\t{d}\n" for k, (n, d) in kept.items()))
