"""``harness import``: external or published results (CSV) as rows of ``runs``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from harness.analysis.rows.selectors import parse_columns
from harness.cli.options import resolve_results, results_option
from harness.core.config import SCALES
from harness.core.errors import UserError


@click.command(name="import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--grid", required=True, help="Grid the rows belong to (results/<grid>/).")
@click.option(
    "--source", default=None, help="Where the numbers come from (default: import:<file name>)."
)
@click.option(
    "--scale",
    type=click.Choice(SCALES),
    default="full",
    show_default=True,
    help="Scale of rows without a scale column.",
)
@click.option("--extra", default="", help="Further metric columns in the file, comma separated.")
@click.option(
    "--curves",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="CSV of the runs' loss curves: key columns naming a run of FILE (a run name, or e.g. "
    "model,batch_size,seed), step, and tokens/train_loss/val_loss/lr/elapsed_s (W&B names "
    "such as Name, _step, train/loss, val/loss read as these). Read by targets, profiles, "
    "speedup --target, critical-batch and the curve figures.",
)
@click.option(
    "--map",
    "mapping",
    multiple=True,
    metavar="NAME=column",
    help="Read a file column as a harness name, e.g. --map val_loss=eval/loss_main "
    "(repeatable; both files).",
)
@results_option
def import_(
    file: Path,
    grid: str,
    source: str | None,
    scale: str,
    extra: str,
    curves: Path | None,
    mapping: tuple[str, ...],
    results: Path | None,
) -> None:
    """Import a CSV of results (one row per run or seed: config and metric columns), and with
    --curves their loss curves (one row per logged point).

    Rows get status completed (unless a status column says otherwise) and a source, and are then
    analysed and plotted like trained runs. A W&B export goes in as it is: Name (a run name, not
    the arm), State, Step/_step, train/loss, val/loss; tokens are derived from step x batch_size
    x seq_len when the curves have none. Re-importing a file replaces its rows.

    Example: harness import analysis/published/talk_table1.csv --grid talk_table1
    """
    from harness import api

    done = api.import_results(
        file,
        grid=grid,
        results=resolve_results(results),
        source=source,
        scale=scale,
        extra=parse_columns(extra),
        curves=curves,
        mapping=parse_map(mapping),
    )
    derived = f" (derived: {', '.join(done.derived)})" if done.derived else ""
    click.echo(f"imported {done.rows} row(s) into grid {grid!r}: {done.path}{derived}")
    if curves is not None:
        click.echo(f"imported the loss curves of {done.curves} run(s) from {curves}")


def parse_map(items: Sequence[str]) -> dict[str, str]:
    """``--map NAME=column`` values as {file column: harness name}.

    Raises:
        UserError: an item that is not ``NAME=column``.
    """
    out: dict[str, str] = {}
    for item in items:
        name, sep, column = item.partition("=")
        if not sep or not name.strip() or not column.strip():
            raise UserError(f"--map {item!r}: expected NAME=column (e.g. val_loss=eval/loss)")
        out[column.strip()] = name.strip()
    return out
