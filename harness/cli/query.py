"""``harness query``: SQL over the results through DuckDB."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import click
import duckdb
import pandas as pd

from harness.cli.options import resolve_results, results_option
from harness.core.errors import UserError
from harness.core.files import atomic_write_text, temp_name
from harness.store.confine import Confinement, interruptible, memory_bytes, only_reads
from harness.store.db import connect, error_text

FORMATS = ("table", "csv", "json", "parquet")


@click.command()
@click.argument("sql")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="table",
    show_default=True,
    help="table for people; csv, json or parquet (with --output).",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write to this file (required for --format parquet).",
)
@click.option("--grid", default=None, help="Restrict the views to one grid.")
@click.option("--max-rows", default=50, show_default=True, help="Rows shown by --format table.")
@click.option(
    "--unsafe",
    is_flag=True,
    help="Full DuckDB: any statement, files anywhere, extensions (default: SELECT "
    "over the results folder only; also HARNESS_SQL_UNSAFE=1).",
)
@click.option(
    "--memory-limit",
    default=None,
    metavar="SIZE",
    help="DuckDB's memory limit, and the most the result may hold: 4GB, 512MiB, 25% "
    "(default: $HARNESS_SQL_MEMORY, then 25%).",
)
@results_option
def query(
    sql: str,
    fmt: str,
    output: Path | None,
    grid: str | None,
    max_rows: int,
    unsafe: bool,
    memory_limit: str | None,
    results: Path | None,
) -> None:
    """Run SQL over the views runs, curves, manifest and evals: SELECT statements that read
    only the results folder (--unsafe: any DuckDB SQL). Ctrl-C stops a running query.

    Example: harness query "SELECT beta1, beta2, val_ppl FROM runs ORDER BY val_ppl LIMIT 5"
    """
    how = Confinement.from_env(unsafe=unsafe, memory_limit=memory_limit)
    only_reads(sql, how)
    if fmt == "parquet" and output is None:
        raise UserError("--format parquet needs --output FILE")
    tmp = temp_name(output) if fmt == "parquet" and output is not None else None
    con = connect(resolve_results(results), grid, confinement=how, writable=(tmp,) if tmp else ())
    if tmp is not None and output is not None:
        interruptible(con, lambda: _write_parquet(con.sql(sql), tmp, output))
        return
    df = interruptible(con, lambda: _fetch(con, sql, memory_bytes(con)))
    text = _render(df, fmt, max_rows)
    if output:
        atomic_write_text(output, text)  # an OSError names the file; nothing half-written
    else:
        sys.stdout.write(text)


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


CHUNK_VECTORS = 8
"""DuckDB vectors (2,048 rows each) fetched at a time."""


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


def _render(df: pd.DataFrame, fmt: str, max_rows: int) -> str:
    if fmt == "csv":
        return df.to_csv(index=False)
    if fmt == "json":
        return df.to_json(orient="records", date_format="iso") + "\n"
    with pd.option_context(
        "display.max_rows", max_rows, "display.max_columns", 30, "display.width", 200
    ):
        shown = df if len(df) <= max_rows else df.head(max_rows)
        tail = "" if len(df) <= max_rows else f"... ({len(df)} rows, {max_rows} shown)\n"
        return shown.to_string(index=False) + "\n" + tail
