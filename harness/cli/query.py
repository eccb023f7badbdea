"""``harness query``: SQL over the results through DuckDB."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import click
import duckdb

from harness.cli.options import resolve_results, results_option
from harness.core.errors import UserError
from harness.core.files import atomic_write_text, temp_name
from harness.store.db import connect, error_text

FORMATS = ("table", "csv", "json", "parquet")


@click.command()
@click.argument("sql")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
              help="table for people; csv, json or parquet (with --output).")  # fmt: skip
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write to this file (required for --format parquet).")  # fmt: skip
@click.option("--grid", default=None, help="Restrict the views to one grid.")
@click.option("--max-rows", default=50, show_default=True, help="Rows shown by --format table.")
@results_option
def query(
    sql: str, fmt: str, output: Path | None, grid: str | None, max_rows: int, results: Path | None
) -> None:
    """Run SQL over the views runs, curves and manifest.

    Example: harness query "SELECT beta1, beta2, val_ppl FROM runs ORDER BY val_ppl LIMIT 5"
    """
    con = connect(resolve_results(results), grid)
    try:
        rel = con.sql(sql)
    except duckdb.Error as e:
        raise UserError(f"SQL error: {error_text(e)}") from None
    if rel is None:
        raise UserError("the SQL returned no rows (use a SELECT)")
    if fmt == "parquet":
        if output is None:
            raise UserError("--format parquet needs --output FILE")
        _write_parquet(rel, output)
        return
    try:
        df = rel.df()
    except duckdb.Error as e:
        raise UserError(f"SQL error: {error_text(e)}") from None
    text = _render(df, fmt, max_rows)
    if output:
        atomic_write_text(output, text)  # an OSError names the file; nothing half-written
    else:
        sys.stdout.write(text)


def _write_parquet(rel: duckdb.DuckDBPyRelation, output: Path) -> None:
    """DuckDB writes ``output`` through a temp name in its folder, renamed into place: a full
    disk or a read-only folder is an OSError naming ``output``, and leaves no partial file."""
    tmp = temp_name(output)
    try:
        rel.write_parquet(str(tmp))
        os.replace(tmp, output)
    except (duckdb.Error, OSError) as e:
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise OSError(e.errno, e.strerror, str(output)) from None
        cause = next((n for n in _ERRNOS if os.strerror(n) in str(e)), None)
        if cause is not None:
            raise OSError(cause, os.strerror(cause), str(output)) from None
        raise UserError(f"{output}: cannot write it: {str(e).splitlines()[0]}") from None


_ERRNOS = (errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EDQUOT, errno.ENOENT, errno.EISDIR)
"""File-system errors DuckDB reports in its messages (by their strerror text)."""


def _render(df, fmt: str, max_rows: int) -> str:
    if fmt == "csv":
        return df.to_csv(index=False)
    if fmt == "json":
        return df.to_json(orient="records", date_format="iso") + "\n"
    with __import__("pandas").option_context(
        "display.max_rows", max_rows, "display.max_columns", 30, "display.width", 200
    ):
        shown = df if len(df) <= max_rows else df.head(max_rows)
        tail = "" if len(df) <= max_rows else f"... ({len(df)} rows, {max_rows} shown)\n"
        return shown.to_string(index=False) + "\n" + tail
