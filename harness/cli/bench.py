"""``harness bench``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from harness import api
from harness.cli.options import (
    data_option,
    exit_on_faults,
    format_option,
    launcher_option,
    results_option,
    wait_option,
)


@click.command()
@click.argument("candidate")
@click.option(
    "--protocol",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A protocol file (default: the shipped one of --scale).",
)
@click.option(
    "--scale",
    type=click.Choice(sorted(api.BENCH_SCALES)),
    default=None,
    help=f"A shipped protocol: local (protocols/laptop.yaml, a 2-core CPU), paper "
    f"(protocols/paper.yaml, A100s), ci (tests). Default: {api.BENCH_DEFAULT_SCALE}.",
)
@launcher_option(help="Launcher profile (default: the protocol's).")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the plan (runs per phase and arm, runs reused from earlier benches, "
    "compute) and build and step every configuration on the CPU (the preflight); train nothing.",
)
@wait_option(
    "Block until every phase has run (default: local runs block; SLURM returns once a phase "
    "is queued: run the same command again)."
)
@format_option(api.BENCH_FORMATS, "The verdict as a terminal table or JSON.")
@click.option(
    "--html",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the report card (the verdict, then harness report) to this file.",
)
@results_option
@data_option
def bench(candidate: str, fmt: str, **given: Any) -> None:
    """Bench CANDIDATE (an optimizer: torch.optim:SGD, pytorch_optimizer:Lion, ./my_opt.py:MyOpt)
    against the protocol's tuned baselines, and print the verdict per cell.

    Example: harness bench torch.optim:SGD --scale local

    Every arm gets the same tuning budget; each cell's selected configuration is confirmed on
    fresh seeds; the verdict per cell is better, worse, no evidence, or not tuned. The runs are
    an ordinary grid named after the protocol (harness status, report, query work on it), and
    a baseline's runs are shared by every candidate benched under the same protocol.

    Exit status: 0 when the bench ran (whatever the verdict); 1 when any run failed or was
    lost; 2 for bad input; 128 + N when stopped by signal N.
    """
    log = fmt != "table"  # with json, progress goes to stderr and stdout holds the verdict only
    done = api.bench(candidate, out=sys.stderr if log else sys.stdout, **given)
    if done.dry_run or done.verdict is not None:
        text = done.text(fmt)
        click.echo(text if log or done.dry_run else "\n" + text)
    if done.card is not None:
        click.echo(f"wrote {done.card}", err=log)
    exit_on_faults(done.faults, done.plan.grid)
