"""``harness submit``."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from harness.api.choices import PLAN_FORMATS, STALE_CHOICES
from harness.cli.options import (
    choice_option,
    data_option,
    exit_on_faults,
    format_option,
    launcher_option,
    resolve_results,
    results_option,
    wait_option,
)


@click.command()
@click.argument("grid", type=click.Path(path_type=Path))
@click.option("--local", is_flag=True, help="Apply the grid's local: overrides (laptop scale).")
@launcher_option()
@click.option("--dry-run", is_flag=True, help="Print runs, preview and compute; submit nothing.")
@click.option(
    "--retry",
    default="",
    help="Comma-separated states to run again (e.g. failed,timeout); never completed runs.",
)
@choice_option(
    "--stale",
    STALE_CHOICES,
    "refuse",
    "Runs whose result was computed with other optimizer or model code, or other data, than "
    "today's: refuse (an error naming them), rerun them, or keep their results.",
)
@wait_option("Block until the runs finish (default: local runs block, SLURM returns once queued).")
@format_option(
    PLAN_FORMATS,
    "With --dry-run: the summary (table), or every planned run's resolved config, one row per "
    "run with its run_id and every field (csv, json).",
)
@click.option(
    "--check",
    is_flag=True,
    help="With --dry-run: also build each optimizer configuration and take one step on the CPU "
    "(the preflight every submit runs before queuing).",
)
@click.option(
    "--extend",
    is_flag=True,
    help="After the grid's runs, add the next value beyond each best on an open edge of a tuned "
    "axis (that cell and arm only), run them, and repeat until no best sits on an open edge or "
    "the grid's extend: limits are reached.",
)
@click.option(
    "--confirm",
    is_flag=True,
    help="Once tuning is done, train each cell's selected configuration on the grid's "
    "confirmation seeds (seeds: {tune: N, confirm: M}); analysis then reports those.",
)
@click.option(
    "--per-arm",
    is_flag=True,
    help="With --extend/--confirm: plan each arm (label) on its own runs: its own rounds of "
    "--extend (an arm added to the grid later gets them too), confirmed once its own extension "
    "has converged; a failed tuning run holds its arm back until retried (as harness bench).",
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
    check: bool,
    extend: bool,
    confirm: bool,
    per_arm: bool,
    results: Path | None,
    data: Path | None,
) -> None:
    """Expand GRID (a YAML file) into runs and launch those without a result.

    Example: harness submit grids/adam_betas.yaml --local

    Check a protocol without running it: harness submit grids/batch_size_gap.yaml --dry-run
    --format csv

    Close the edges of a sweep, then test the winners on fresh seeds: harness submit
    grids/optimizer_gap.yaml --local --extend --confirm (see harness.grid.followup).

    Exit status: 0 when every run it waited for completed or diverged (diverging is a result);
    1 when any failed (failed, oom, timeout, cancelled) or was lost (ended without a row);
    2 for bad input; 128 + N when stopped by signal N.
    """
    from harness import api
    from harness.core.errors import Stopped

    try:
        done = api.submit(
            grid,
            local=local,
            launcher=launcher,
            dry_run=dry_run,
            retry=[s for s in retry.split(",") if s],
            stale=stale,
            wait=wait,
            plan_format=fmt,
            check=check,
            extend=extend,
            confirm=confirm,
            per_arm=per_arm,
            results=resolve_results(results),
            data=data,
            out=sys.stdout,
            err=sys.stderr,
        )
    except Stopped as e:
        again = ["harness", "submit", str(grid), *(["--local"] if local else [])]
        again += [
            f
            for f, on in (("--extend", extend), ("--confirm", confirm), ("--per-arm", per_arm))
            if on
        ]
        for flag, value in (("--launcher", launcher), ("--results", results), ("--data", data)):
            again += [flag, str(value)] if value else []
        raise Stopped(e.signum, [*e.lines, f"resume with: {shlex.join(again)}"]) from None
    exit_on_faults(done.faults, done.last.grid)
