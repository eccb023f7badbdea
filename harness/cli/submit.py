"""``harness submit``."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from harness.analysis.figures import FIGURES
from harness.cli.options import data_option, resolve_results, results_option
from harness.data.catalogue import data_root
from harness.grid.preview import PLAN_FORMATS
from harness.launch.inputs import STALE_CHOICES


@click.command()
@click.argument("grid", type=click.Path(path_type=Path))
@click.option("--local", is_flag=True, help="Apply the grid's local: overrides (laptop scale).")
@click.option("--launcher", default=None, help="Launcher profile name (launchers/NAME.yaml).")
@click.option("--dry-run", is_flag=True, help="Print runs, preview and compute; submit nothing.")
@click.option(
    "--retry",
    default="",
    help="Comma-separated states to run again (e.g. failed,timeout); never completed runs.",
)
@click.option(
    "--stale",
    type=click.Choice(STALE_CHOICES),
    default="refuse",
    show_default=True,
    help="Runs whose result was computed with other optimizer or model code, or other data, than "
    "today's: refuse (an error naming them), rerun them, or keep their results.",
)
@click.option(
    "--wait/--no-wait",
    default=None,
    help="Block until the runs finish (default: local runs block, SLURM returns once queued).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(PLAN_FORMATS),
    default="table",
    show_default=True,
    help="With --dry-run: the summary (table), or every planned run's resolved config, one row "
    "per run with its run_id and every field (csv, json).",
)
@results_option
@data_option
def submit(
    grid: Path,
    local: bool,
    launcher: str | None,
    dry_run: bool,
    retry: str,
    stale: str,
    wait: bool | None,
    fmt: str,
    results: Path | None,
    data: Path | None,
) -> None:
    """Expand GRID (a YAML file) into runs and launch those without a result.

    Example: harness submit grids/adam_betas.yaml --local

    Check a protocol without running it: harness submit grids/batch_size_gap.yaml --dry-run
    --format csv

    Exit status: 0 when every run it waited for completed or diverged (diverging is a result);
    1 when any failed (failed, oom, timeout, cancelled) or was lost (ended without a row);
    2 for bad input; 128 + N when stopped by signal N.
    """
    from harness.core.errors import Stopped
    from harness.launch.submit import submit as do_submit

    states = [s for s in retry.split(",") if s]
    try:
        report = do_submit(
            grid,
            root=resolve_results(results),
            data_root=data_root(data),
            local=local,
            launcher=launcher,
            dry_run=dry_run,
            retry=states,
            wait=wait,
            stale=stale,
            plan_format=fmt,
            figure_names=FIGURES.names(),
            out=sys.stdout,
        )
    except Stopped as e:
        again = ["harness", "submit", str(grid), *(["--local"] if local else [])]
        for flag, value in (("--launcher", launcher), ("--results", results), ("--data", data)):
            again += [flag, str(value)] if value else []
        raise Stopped(e.signum, [*e.lines, f"resume with: {shlex.join(again)}"]) from None
    if report.statuses:
        counts: dict[str, int] = {}
        for s in report.statuses.values():
            counts[s] = counts.get(s, 0) + 1
        click.echo("finished: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if report.lost:
        click.echo(f"lost: {len(report.lost)} runs ended without a row: {', '.join(report.lost)}")
    if report.faults:
        click.echo(f"exit 1: {report.faults} runs failed or were lost; see 'harness status "
                   f"{report.grid}' and each run's log", err=True)  # fmt: skip
        sys.exit(1)
