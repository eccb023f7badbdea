"""``harness bench``."""

from __future__ import annotations

import contextlib
import shlex
import sys
from pathlib import Path

import click

from harness.bench import DEFAULT_SCALE, SCALES
from harness.bench.render import FORMATS
from harness.cli.options import (
    data_option,
    format_option,
    launcher_option,
    resolve_results,
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
    type=click.Choice(sorted(SCALES)),
    default=None,
    help=f"A shipped protocol: local (protocols/laptop.yaml, a 2-core CPU), paper "
    f"(protocols/paper.yaml, A100s), ci (tests). Default: {DEFAULT_SCALE}.",
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
@format_option(FORMATS, "The verdict as a terminal table or JSON.")
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
    from harness.bench import derive_bench, judge, plan, run, scale_name
    from harness.bench.render import opening_line, plan_text, verdict_json, verdict_table
    from harness.core.errors import Stopped
    from harness.data.catalogue import data_root

    root = resolve_results(results)
    droot = data_root(data)
    derived = derive_bench(candidate, root=root, scale=scale, protocol=protocol, launcher=launcher)
    p = plan(derived, root, droot)
    if dry_run:
        from harness.bench.derive import preflight

        click.echo(plan_text(p, derived))
        click.echo(f"preflight: {preflight(derived, root, droot)}")
        return
    log = fmt != "table"  # with json, progress goes to stderr and stdout holds the verdict only
    where = scale_name(scale, protocol)
    click.echo(opening_line(p, where), err=log)
    for a in p.arms:
        if a.tuning_done:
            line = (
                f"{p.grid}: {a.label}: {a.tuning_done} of {a.tuning} tuning runs have a "
                "result from an earlier bench (reused, not trained again)"
            )
            click.echo(line, err=log)
    # With json, whatever a backend prints while launching (SLURM's "queued ... array tasks")
    # goes to stderr too: stdout holds the verdict only.
    try:
        with contextlib.redirect_stdout(sys.stderr) if log else contextlib.nullcontext():
            progress = run(
                derived,
                root=root,
                data_root=droot,
                launcher=launcher,
                wait=wait,
                out=sys.stderr if log else sys.stdout,
                most=p.to_train_max,
            )
    except Stopped as e:
        given = {"--protocol": protocol, "--scale": scale, "--launcher": launcher}
        given |= {"--results": results, "--data": data}
        again = ["harness", "bench", candidate]
        for flag, value in given.items():
            again += [flag, str(value)] if value else []
        again += [] if wait is None else ["--wait" if wait else "--no-wait"]
        raise Stopped(e.signum, [*e.lines, f"resume with: {shlex.join(again)}"]) from None
    if progress.queued:  # submit said so ("queued: run the same command again ...")
        click.echo(f"follow with 'harness status {p.grid}'", err=log)
    else:
        verdict = judge(derived, root, droot)
        caveats = derived.candidate.caveats
        text = verdict_json(verdict, caveats) if log else "\n" + verdict_table(verdict, caveats)
        click.echo(text)
        if html is not None:
            from harness.bench.card import report_card
            from harness.core.files import atomic_write_text

            atomic_write_text(html, report_card(verdict, derived, root, where))
            click.echo(f"wrote {html}", err=log)
    if progress.faults:
        click.echo(
            f"exit 1: {progress.faults} runs failed or were lost; see 'harness status "
            f"{p.grid}' and each run's log",
            err=True,
        )
        sys.exit(1)
