"""``harness bench``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from harness import api
from harness.cli.options import (
    data_option,
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
def bench(
    candidate: str,
    protocol: Path | None,
    scale: str | None,
    launcher: str | None,
    dry_run: bool,
    wait: bool | None,
    fmt: str,
    html: Path | None,
    results: Path | None,
    data: Path | None,
) -> None:
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
    done = api.bench(
        candidate,
        protocol=protocol,
        scale=scale,
        launcher=launcher,
        dry_run=dry_run,
        wait=wait,
        html=html,
        results=results,
        data=data,
        out=sys.stderr if log else sys.stdout,
    )
    if done.dry_run or done.verdict is not None:
        text = done.text(fmt)
        click.echo(text if log or done.dry_run else "\n" + text)
    if done.card is not None:
        click.echo(f"wrote {done.card}", err=log)
    if done.faults:
        click.echo(
            f"exit 1: {done.faults} runs failed or were lost; see 'harness status "
            f"{done.plan.grid}' and each run's log",
            err=True,
        )
        sys.exit(1)
