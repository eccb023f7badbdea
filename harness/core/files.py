"""File-system primitives shared by every writer: atomic replacement and an advisory lock.

Every file the harness writes for others to read (result rows, curves, manifests, checkpoints,
submission records, figures, caches) goes through :func:`atomic_write`: readers, and a writer
killed half-way, never see a partial file.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import glob
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from harness.core.errors import UserError


def atomic_write(path: Path, write: Callable[[IO[bytes]], object]) -> None:
    """Write ``path`` through ``write(fh)`` into a hidden temp file in the same folder, fsync it,
    and rename it into place: readers (and a killed writer) never see a partial file.

    Raises:
        OSError: the write failed for a reason of the file system (no space left, read-only,
            permission denied), with ``path`` as its file name, even where the writer reported
            it as another exception (torch's zip writer raises a RuntimeError).
    """
    tmp = temp_name(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except Exception as exc:
        cause = os_error_in(exc)
        if cause is None:
            raise
        raise OSError(cause.errno, os.strerror(cause.errno), str(path)) from exc  # type: ignore[arg-type]  # os_error_in returns errors with an errno
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def temp_name(path: Path) -> Path:
    """The hidden temp file :func:`atomic_write` writes ``path`` through
    (``.<name>.tmp-<pid>-<hex>``, never matched by a ``*.parquet`` or ``*.pt`` pattern)."""
    return path.with_name(f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")


def _temp_pattern(name: str) -> str:
    """The glob pattern of :func:`temp_name`'s files for a file name pattern ``name``."""
    return f".{name}.tmp-*"


STALE_TEMP_S = 3600.0
"""Age (seconds since its last write) past which a temp file of :func:`atomic_write` is an
orphan: a write in progress touches its file every few milliseconds (a 2 GB checkpoint takes
seconds), so only a writer killed mid-write leaves one this old."""


def remove_stale_temps(folders: Iterable[Path], older_than_s: float = STALE_TEMP_S) -> list[Path]:
    """Remove the temp files of :func:`atomic_write` in ``folders`` (not below them) not written
    to for ``older_than_s``; returns them. A file that cannot be removed is left (and not
    returned). The process that wrote one may have run on another host, so its age decides, not
    its pid."""
    now = time.time()
    removed = []
    for folder in folders:
        for p in folder.glob(_temp_pattern("*")) if folder.is_dir() else ():
            with contextlib.suppress(OSError):
                if now - p.stat().st_mtime > older_than_s:
                    p.unlink()
                    removed.append(p)
    return removed


def remove_temps(path: Path) -> int:
    """Remove the temp files :func:`atomic_write` left for ``path`` (a writer killed during its
    write). Only safe where no one else writes ``path`` now. Returns how many were removed."""
    removed = 0
    for tmp in path.parent.glob(_temp_pattern(glob.escape(path.name))):
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
            removed += 1
    return removed


def os_error_in(exc: BaseException) -> OSError | None:
    """The OSError with an errno that ``exc`` is or was raised from (its cause or context)."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        if isinstance(e, OSError) and e.errno:
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None


def os_error_line(e: OSError) -> str:
    """One line naming the path and the cause of a file-system error; for a full disk also the
    free space left there."""
    reason = os.strerror(e.errno) if e.errno else str(e)
    where = e.filename if e.filename is not None else None
    line = f"{where}: {reason}" if where is not None else reason
    if e.errno == errno.ENOSPC and where is not None:
        line += f" (free on that file system: {_free(Path(where))})"
    return line


def _free(path: Path) -> str:
    """Free space of the file system holding ``path`` (or its nearest existing parent)."""
    for p in (path, *path.parents):
        with contextlib.suppress(OSError):
            return _size(shutil.disk_usage(p).free)
    return "unknown"


def _size(n: float) -> str:
    """``n`` bytes as B, KB, MB, GB or TB (powers of 1000)."""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """:func:`atomic_write` of a bytes value."""
    atomic_write(path, lambda fh: fh.write(data))


def atomic_write_text(path: Path, text: str) -> None:
    """:func:`atomic_write` of a UTF-8 text."""
    atomic_write_bytes(path, text.encode())


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing) for the ``with`` block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@contextmanager
def try_locked(path: Path, wait_s: float = 2.0) -> Iterator[bool]:
    """Try to hold an exclusive ``flock`` on ``path`` (created if missing) for the ``with``
    block; yields whether it is held. Another process holding it for ``wait_s`` seconds (a
    probe, :func:`is_locked`, holds it for microseconds) means no. The kernel releases the lock
    when its process dies, however it dies, so a dead process never holds one. A lock file
    removed while it was being locked (:func:`remove_unheld_lock`) is created and locked
    afresh, so two processes never both hold a run's lock."""
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_s
    while True:
        with open(path, "a") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() > deadline:
                    yield False
                    return
                time.sleep(0.05)
                continue
            if not _still_named(f, path):
                fcntl.flock(f, fcntl.LOCK_UN)
                continue  # removed (or replaced) between open and lock: lock the file there now
            try:
                yield True
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)
            return


def _still_named(f: IO[str], path: Path) -> bool:
    """Whether the open file ``f`` is still the file at ``path``."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(f.fileno())
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


def remove_unheld_lock(path: Path) -> bool:
    """Remove the lock file ``path`` if no process holds it (:func:`try_locked`); returns whether
    it was removed. It is removed while this process holds it, so a process that opened it
    meanwhile finds it gone once it gets the lock, and locks a new file (:func:`try_locked`)."""
    try:
        with _flocked(path, fcntl.LOCK_EX) as f:
            if f is None or not _still_named(f, path):
                return False
            path.unlink()
            return True
    except FileNotFoundError:
        return False


def is_locked(path: Path) -> bool:
    """Whether a live process holds ``path``'s lock (:func:`try_locked`); False when there is no
    such file."""
    try:
        with _flocked(path, fcntl.LOCK_SH) as f:
            return f is None
    except FileNotFoundError:
        return False


@contextmanager
def _flocked(path: Path, op: int) -> Iterator[IO[str] | None]:
    """``path`` opened and ``flock``-ed with ``op`` (without waiting) for the ``with`` block;
    None when another process holds a conflicting lock.

    Raises:
        FileNotFoundError: there is no such file.
    """
    with open(path) as f:
        try:
            fcntl.flock(f, op | fcntl.LOCK_NB)
        except BlockingIOError:
            yield None
            return
        try:
            yield f
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def quarantine(path: Path, dest: Path, cause: str) -> Path:
    """Move the corrupt file ``path`` to ``dest`` (suffixed ``.1``, ``.2``, ... when taken) and
    say so in one line on stderr. Returns where it went.

    Raises:
        UserError: it cannot be moved (a read-only folder): one line naming it and the cause.
    """
    target, n = dest, 0
    while target.exists():
        n += 1
        target = dest.with_name(f"{dest.name}.{n}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
    except FileNotFoundError:
        return target  # moved (or replaced by a writer) meanwhile
    except OSError as e:
        raise UserError(
            f"{path}: {cause}; it cannot be moved aside ({os_error_line(e)}): move or delete it"
        ) from None
    sys.stderr.write(f"warning: {path}: {cause}; moved to {target}\n")
    return target


FileStamp = tuple[int, int, int]
"""(inode, mtime in ns, size) of a file: changes whenever the file is written or replaced."""


def file_stamp(path: Path) -> FileStamp | None:
    """The :data:`FileStamp` of ``path``, None when there is no such file."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size
