"""``harness eval``."""

from __future__ import annotations

from pathlib import Path

import click

from harness import api
from harness.cli.options import data_option, launcher_option, results_option, wait_option


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
@launcher_option(default="local")
@click.option("--limit", type=int, default=None, help="Documents per task (default: all).")
@wait_option(
    "Block until the evaluations finish (local ones always do; SLURM: returns once queued)."
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
    names = [t.strip() for t in tasks.split(",") if t.strip()]
    plan = api.evaluate(
        grid,
        names,
        launcher=launcher,
        include=include,
        limit=limit,
        wait=wait,
        results=results,
        data=data,
    )
    pairs = sum(len(j.tasks) for j in plan.jobs)
    did = f"queued {pairs}" if plan.evaluated is None else f"evaluated {plan.evaluated}"
    without = len(plan.without_weights)
    click.echo(
        f"{did} (run, task) pairs of {len(plan.jobs)} runs; skipped {plan.skipped} already "
        "scored with the same weights"
        + (f"; {without} completed runs keep no weights" if without else "")
    )
