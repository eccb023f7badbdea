"""``harness submit`` as a function: a grid's runs without a result launched, then the
follow-up rounds; and the one progress line of several submits (``harness bench``)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from harness.core import paths
from harness.services.args import data_dir

if TYPE_CHECKING:
    from harness.core.config import RunConfig
    from harness.followup.rounds import Submitted
    from harness.grid.load import Grid


def submit(
    grid: str | Path | Grid,
    *,
    local: bool = False,
    launcher: str | None = None,
    dry_run: bool = False,
    retry: Sequence[str] = (),
    stale: str = "refuse",
    wait: bool | None = None,
    plan_format: str = "table",
    check: bool = False,
    extend: bool = False,
    confirm: bool = False,
    per_arm: bool = False,
    more: Sequence[RunConfig] = (),
    results: str | Path | None = None,
    data: str | Path | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> Submitted:
    """Launch ``grid``'s runs that have no result yet, and with ``extend``/``confirm`` the
    follow-up rounds planned from their results until nothing is added (``harness submit``).

    Args:
        grid: the grid YAML, or a grid in memory (:func:`harness.api.expand`: submitted as
            expanded, the same runs as its file would plan; nothing is read back).
        local: apply the grid's ``local:`` overrides (a file's) and use the ``local`` launcher.
        launcher: a launcher profile name (overrides the grid's and ``local``'s).
        dry_run: print the plan (``plan_format``: table, csv or json); launch nothing.
        retry: statuses whose runs run again (never ``completed``).
        stale: runs whose result came from other code or data: ``refuse``, ``rerun``, ``keep``.
        wait: block until the runs finish (None: local runs block, SLURM returns once queued).
        check: with ``dry_run``, build each optimizer and take one CPU step (the preflight).
        extend: add the next value beyond each best on an open edge, round after round.
        confirm: train each cell's selected configuration on the confirmation seeds.
        per_arm: plan ``extend``/``confirm`` for each arm (each ``label`` of the grid's runs) on
            its own rows: its own rounds of extension, whatever runs of other labels the
            results hold (a grid file of the same name with other arms), confirmed once its own
            extension has converged; an arm with a failed tuning run plans nothing until it
            is retried (arms are compared on whole budgets). ``harness bench`` plans so.
        more: runs added to the follow-ups ``extend``/``confirm`` plan (``harness bench``'s
            sequential confirmation seeds); each is written to the grid's manifest when launched.
        results: the results root (None: ``$HARNESS_RESULTS``, then ``./results``).
        data: where datasets are prepared (None: ``$HARNESS_DATA``, then the data home).
        out: where the report goes (None: stdout); ``err``: notes beside a csv/json plan.

    Returns:
        Each round's report and the runs that failed or were lost.
    """
    from harness.followup.rounds import submit_rounds

    return submit_rounds(
        grid,
        root=paths.results_root(results),
        data_root=data_dir(data),
        local=local,
        launcher=launcher,
        dry_run=dry_run,
        retry=retry,
        wait=wait,
        stale=stale,
        plan_format=plan_format,
        check=check,
        extend=extend,
        confirm=confirm,
        per_arm=per_arm,
        more=more,
        out=out or sys.stdout,
        err=err or sys.stderr,
    )


@contextlib.contextmanager
def one_progress(name: str, most: int) -> Iterator[None]:
    """Inside, every batch's progress line (``submit``'s rounds) also counts toward one whole
    of at most ``most`` runs called ``name``, with its ETA (``harness bench``: one ETA for every
    phase)."""
    from harness.launch.progress import whole

    with whole(name, most):
        yield
