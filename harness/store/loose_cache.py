"""The rows of a grid's per-run row files (those no compaction covers yet), kept between readers
on this machine, so that only the first reader after new rows reads the files.

Every connection reads the loose row files once (:func:`harness.store.db._runs_sql`): about
2.5 ms of CPU per file (its footer and 123 column chunks), 0.6 s with the 255 files a grid holds
just before a compaction by itself, in every ``status``, ``query`` and ``analyze``. The table they
give is kept as one Arrow IPC file in the cache folder (:func:`harness.core.env.cache_dir`),
never in the results folder (a read leaves the results folder as it was:
``tests/store/test_sql_guard.py``), one file per folder of row files, replaced atomically.

The key is what the table depends on: each file's path, size, modification time (ns), device
and inode, taken *before* the files are read (a file changed during the read changes the key of
the next reader, never the table of this one's key), the read's :data:`FORMAT`, DuckDB's and
pyarrow's versions. Per-run files are written once under a new name and never replaced
(:mod:`harness.store.rows`); a file moved aside as corrupt (:mod:`harness.store.integrity`) or
covered and removed leaves the list, which changes the key. A cache that cannot be read or
written costs the cache, never the read.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import duckdb
import pyarrow as pa

from harness.core.env import cache_dir
from harness.core.files import atomic_write_bytes

FOLDER = "loose-rows"
"""The cache's folder under :func:`harness.core.env.cache_dir`."""

FORMAT = "1"
"""The read's version: changed where the table read from the files would change (its SQL)."""

KEEP = 64
"""Files kept in the folder (one per folder of row files read): a write removes the oldest
beyond it (a machine's test runs make a results folder each)."""

KEY = b"harness.loose_rows.key"
"""The schema metadata entry that holds a file's key."""


def folder() -> Path:
    """Where the tables are kept."""
    return cache_dir() / FOLDER


def key(files: Sequence[Path]) -> str:
    """The key of the table read from ``files`` now (module docstring); raises ``OSError`` where
    one cannot be stat'ed."""
    h = hashlib.sha256(f"{FORMAT}|{duckdb.__version__}|{pa.__version__}".encode())
    for p in files:
        st = os.stat(p)
        h.update(f"|{p}|{st.st_size}|{st.st_mtime_ns}|{st.st_dev}|{st.st_ino}".encode())
    return h.hexdigest()


def _place(files: Sequence[Path]) -> Path:
    """The cache file of the folder(s) ``files`` are in."""
    where = "|".join(sorted({str(p.parent.absolute()) for p in files}))
    return folder() / f"{hashlib.sha256(where.encode()).hexdigest()[:32]}.arrow"


def rows(files: Sequence[Path], read: Callable[[Sequence[Path]], pa.Table]) -> pa.Table:
    """The table ``read(files)`` gives, from the cache where it holds it for ``files`` as they
    are now; else read, and kept for the next reader."""
    try:
        wanted = key(files)
    except OSError:  # a file gone: the read says so, as without the cache
        return read(files)
    place = _place(files)
    kept = _kept(place, wanted)
    if kept is not None:
        return kept
    table = read(files)
    _keep(place, wanted, table)
    return table


def _kept(place: Path, wanted: str) -> pa.Table | None:
    """The table kept at ``place`` under the key ``wanted``; None where there is none."""
    try:
        reader = pa.ipc.open_file(pa.BufferReader(place.read_bytes()))
        meta = dict(reader.schema.metadata or {})
        if meta.pop(KEY, None) != wanted.encode():
            return None
        table = reader.read_all()
    except (OSError, pa.ArrowException):
        return None
    return table.replace_schema_metadata(meta or None)


def _keep(place: Path, wanted: str, table: pa.Table) -> None:
    """Write ``table`` under the key ``wanted`` at ``place`` (silently not, where the folder
    refuses), and remove the oldest files beyond :data:`KEEP`."""
    meta = {**(table.schema.metadata or {}), KEY: wanted.encode()}
    sink = pa.BufferOutputStream()
    with contextlib.suppress(pa.ArrowException, OSError):
        with pa.ipc.new_file(sink, table.schema.with_metadata(meta)) as writer:
            writer.write_table(table.replace_schema_metadata(meta))
        atomic_write_bytes(place, sink.getvalue().to_pybytes())
        _prune(place.parent)


def _prune(where: Path) -> None:
    """Remove the least recently written files of ``where`` beyond :data:`KEEP`."""
    found = []
    for entry in os.scandir(where):
        if entry.name.endswith(".arrow"):
            with contextlib.suppress(OSError):
                found.append((entry.stat().st_mtime_ns, entry.path))
    for _, path in sorted(found)[: max(0, len(found) - KEEP)]:
        with contextlib.suppress(OSError):
            os.unlink(path)
