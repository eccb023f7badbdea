"""``harness eval``."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli.options import data_option, resolve_results, results_option
from harness.data.catalogue import data_root


@click.command("eval")
@click.argument("grid")
@click.option(
    "--tasks",
    required=True,
    help="Comma-separated lm-eval task, group or tag names (hellaswag,arc_easy), or those of "
    "--include folders.",
)
@click.option(
    "--include",
    multiple=True,
    type=click.Path(path_type=Path),
    help="A folder of task YAML files (a task from local files); repeatable.",
)
@click.option(
    "--launcher", default="local", show_default=True, help="Launcher profile (launchers/NAME.yaml)."
)
@click.option("--limit", type=int, default=None, help="Documents per task (default: all).")
@click.option(
    "--wait/--no-wait",
    default=None,
    help="Block until the evaluations finish (local ones always do; SLURM: returns once queued).",
)
@results_option
@data_option
def evaluate(
    grid: str,
    tasks: str,
    include: tuple[Path, ...],
    launcher: str,
    limit: int | None,
    wait: bool | None,
    results: Path | None,
    data: Path | None,
) -> None:
    """Evaluate GRID's completed runs (a grid file or name) on downstream tasks with
    lm-evaluation-harness: one row per (run, task, metric) in the ``evals`` view. The grid must
    keep its runs' final weights (keep_weights: true); (run, task) pairs already scored with the
    same weights are skipped."""
    from harness.grid.load import grid_name
    from harness.launch.evals import eval_grid

    names = [t.strip() for t in tasks.split(",") if t.strip()]
    plan = eval_grid(
        resolve_results(results),
        grid_name(grid),
        names,
        data_root=data_root(data),
        launcher=launcher,
        include=include,
        limit=limit,
        wait=wait,
    )
    pairs = sum(len(j.tasks) for j in plan.jobs)
    did = f"queued {pairs}" if plan.evaluated is None else f"evaluated {plan.evaluated}"
    without = len(plan.without_weights)
    click.echo(
        f"{did} (run, task) pairs of {len(plan.jobs)} runs; skipped {plan.skipped} already "
        "scored with the same weights"
        + (f"; {without} completed runs keep no weights" if without else "")
    )
