"""``harness query``: SQL over the results through DuckDB (:func:`harness.api.query`)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from harness import api
from harness.cli.options import format_option, results_option
from harness.core.errors import UserError


@click.command()
@click.argument("sql")
@format_option(api.QUERY_FORMATS, "table for people; csv, json or parquet (with --output).")
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write to this file (required for --format parquet).",
)
@click.option(
    "--grid", default=None, help="Restrict the views to one grid (a grid YAML file or a name)."
)
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
    fmt: api.QueryFormat,
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
    if output is not None:
        api.export(
            sql,
            output,
            grid,
            fmt=fmt,
            max_rows=max_rows,
            results=results,
            unsafe=unsafe,
            memory_limit=memory_limit,
        )
        return
    if fmt == "parquet":
        raise UserError("--format parquet needs --output FILE")
    rows = api.query(sql, grid, results=results, unsafe=unsafe, memory_limit=memory_limit)
    sys.stdout.write(api.query_text(rows, fmt, max_rows))
