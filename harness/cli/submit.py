"""``harness submit``."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from harness.analysis.present.figures import FIGURES
from harness.cli.options import data_option, resolve_results, results_option
from harness.data.catalogue import data_root
from harness.grid.preview import PLAN_FORMATS
from harness.launch.inputs import STALE_CHOICES

if TYPE_CHECKING:
    from harness.core.config import RunConfig
    from harness.grid.load import Grid
    from harness.launch.submit import SubmitReport


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
    from harness.core.errors import Stopped
    from harness.launch.submit import submit as do_submit

    states = [s for s in retry.split(",") if s]
    root = resolve_results(results)
    planner = _Planner(root, extend, confirm, dry_run, fmt) if extend or confirm else None

    def once() -> SubmitReport:
        return do_submit(
            grid,
            root=root,
            data_root=data_root(data),
            local=local,
            launcher=launcher,
            dry_run=dry_run,
            retry=states,
            wait=wait,
            stale=stale,
            plan_format=fmt,
            check=check,
            figure_names=FIGURES.names(),
            more=planner,
            out=sys.stdout,
        )

    faults = 0
    try:
        report = once()
        faults += _finished(report)
        # --extend/--confirm: plan again once the runs have finished, until nothing is added
        # (runs another process trained meanwhile have ended too: this submit joins its rounds;
        # a round whose runs all ended without a row ends the loop)
        while (planner is not None and not dry_run and report.launched and report.waited
               and (report.statuses or not report.lost)):  # fmt: skip
            if not report.statuses:
                click.echo(f"{report.grid}: another process trained this round's runs; "
                           "planning the next round")  # fmt: skip
            report = once()
            faults += _finished(report)
        if planner is not None and not dry_run and report.launched and not report.waited:
            click.echo("queued: run the same command again once they finish (or add --wait)")
    except Stopped as e:
        again = ["harness", "submit", str(grid), *(["--local"] if local else [])]
        again += [f for f, on in (("--extend", extend), ("--confirm", confirm)) if on]
        for flag, value in (("--launcher", launcher), ("--results", results), ("--data", data)):
            again += [flag, str(value)] if value else []
        raise Stopped(e.signum, [*e.lines, f"resume with: {shlex.join(again)}"]) from None
    if faults:
        click.echo(f"exit 1: {faults} runs failed or were lost; see 'harness status "
                   f"{report.grid}' and each run's log", err=True)  # fmt: skip
        sys.exit(1)


def _finished(report: SubmitReport) -> int:
    """Print what became of the runs; returns how many failed or were lost."""
    if report.statuses:
        counts: dict[str, int] = {}
        for s in report.statuses.values():
            counts[s] = counts.get(s, 0) + 1
        click.echo("finished: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if report.lost:
        click.echo(f"lost: {len(report.lost)} runs ended without a row: {', '.join(report.lost)}")
    return report.faults


class _Planner:
    """The runs ``--extend`` / ``--confirm`` add to a grid (``analysis.followup``), printed as
    they are planned (on stderr when the plan is printed as csv or json); a dry run also prints
    their compute."""

    def __init__(self, root: Path, extend: bool, confirm: bool, dry_run: bool, fmt: str) -> None:
        self.root, self.extend, self.confirm, self.dry_run = root, extend, confirm, dry_run
        self.err = fmt != "table"

    def __call__(self, g: Grid) -> tuple[RunConfig, ...]:
        from harness.followup.planning import follow_up

        found = follow_up(g, self.root, extend=self.extend, confirm=self.confirm)
        for line in found.lines:
            click.echo(f"{g.name}: {line}", err=self.err)
        click.echo(f"{g.name}: {len(found.new)} new run(s) planned", err=self.err)
        if self.dry_run and found.new and not self.err:
            from harness.grid.preview import describe
            from harness.launch.sizes import count_params

            click.echo(describe(found.new, g.axes, count_params))
        return found.runs
