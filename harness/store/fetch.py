"""SQL over the results, fetched for a caller (``harness query``, :func:`harness.api.query`):
the rows read a chunk at a time under a memory limit, or written to a Parquet file by DuckDB.

The SQL is checked and confined by :mod:`harness.store.confine` (what it may read and do); here
only what its result may hold, and how DuckDB's errors reach the user.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from pathlib import Path

import duckdb
import pandas as pd

from harness.core.errors import UserError
from harness.core.files import temp_name
from harness.store.confine import Confinement, interruptible, memory_bytes, only_reads
from harness.store.db import connect, error_text

CHUNK_VECTORS = 8
"""DuckDB vectors (2,048 rows each) fetched at a time."""


def fetch(root: Path, sql: str, grids: Sequence[str] | None, how: Confinement) -> pd.DataFrame:
    """The rows of ``sql`` over the views of ``grids`` (None: every grid) under ``root``.

    Raises:
        UserError: the SQL is refused (``how``), fails, returns no rows, or its result holds
            more than the memory limit.
        KeyboardInterrupt: Ctrl-C stopped it.
    """
    only_reads(sql, how)
    con = connect(root, list(grids) if grids else None, confinement=how)
    return interruptible(con, lambda: _fetch(con, sql, memory_bytes(con)))


def write_parquet(
    root: Path, sql: str, output: Path, grids: Sequence[str] | None, how: Confinement
) -> Path:
    """Write the rows of ``sql`` to ``output`` (Parquet, written by DuckDB: no memory limit on
    the result), through a temporary name in its folder.

    Raises:
        UserError: see :func:`fetch`; OSError: ``output`` cannot be written (names it).
    """
    only_reads(sql, how)
    tmp = temp_name(output)
    con = connect(root, list(grids) if grids else None, confinement=how, writable=(tmp,))
    interruptible(con, lambda: _write_parquet(con.sql(sql), tmp, output))
    return output


def _fetch(con: duckdb.DuckDBPyConnection, sql: str, limit: int | None) -> pd.DataFrame:
    """The rows of ``sql``, read a chunk at a time so that a result larger than ``limit``
    bytes is refused before it fills the memory (DuckDB's memory limit does not bound the
    result handed to Python)."""
    try:
        con.execute(sql)
        chunks, size = [], 0
        while True:
            chunk = con.fetch_df_chunk(CHUNK_VECTORS)
            size += int(chunk.memory_usage(deep=True).sum())
            if limit is not None and size > limit:
                con.interrupt()
                raise UserError(
                    f"the result holds more than the memory limit ({limit / 2**20:,.0f} MiB): "
                    "add a LIMIT or aggregate, or raise --memory-limit"
                )
            chunks.append(chunk)
            if chunk.empty:
                break
    except duckdb.InterruptException:
        raise KeyboardInterrupt from None
    except duckdb.Error as e:
        raise UserError(f"SQL error: {error_text(e)}") from None
    if len(chunks) == 1 and not len(chunks[0].columns):
        raise UserError("the SQL returned no rows (use a SELECT)")
    return pd.concat(chunks, ignore_index=True) if len(chunks) > 1 else chunks[0]


def _write_parquet(rel: duckdb.DuckDBPyRelation, tmp: Path, output: Path) -> None:
    """DuckDB writes ``output`` through the temp name ``tmp`` in its folder, renamed into place:
    a full disk or a read-only folder is an OSError naming ``output``, and leaves no partial
    file."""
    try:
        rel.write_parquet(str(tmp))
        os.replace(tmp, output)
    except duckdb.InterruptException:
        tmp.unlink(missing_ok=True)
        raise KeyboardInterrupt from None
    except (duckdb.Error, OSError) as e:
        tmp.unlink(missing_ok=True)
        if isinstance(
            e,
            duckdb.ParserException
            | duckdb.BinderException
            | duckdb.CatalogException
            | duckdb.PermissionException,
        ):
            raise UserError(f"SQL error: {error_text(e)}") from None
        if isinstance(e, OSError):
            raise OSError(e.errno, e.strerror, str(output)) from None
        cause = next((n for n in _ERRNOS if os.strerror(n) in str(e)), None)
        if cause is not None:
            raise OSError(cause, os.strerror(cause), str(output)) from None
        raise UserError(f"{output}: cannot write it: {str(e).splitlines()[0]}") from None


_ERRNOS = (errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EDQUOT, errno.ENOENT, errno.EISDIR)
"""File-system errors DuckDB reports in its messages (by their strerror text)."""
