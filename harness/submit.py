"""``submit``: expand a grid, record its manifest, and launch the runs that have no result yet.

Everything that can be wrong with the user's input is checked before anything is written;
re-submitting a grid launches nothing that already has a result (``retry`` names the failure
states to run again).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from harness import plan
from harness.data import TokenData, ensure_prepared
from harness.errors import UserError
from harness.grid import Grid, load_grid
from harness.launch.profile import LauncherProfile, load_profile
from harness.launch.registry import launcher_for
from harness.outcome import STATUSES


@dataclass(frozen=True, slots=True)
class SubmitReport:
    """What ``submit`` did."""

    grid: str
    """The grid's name."""
    planned: int
    """Runs in the (expanded) grid."""
    skipped: int
    """Runs not launched because they already have a result (or are queued)."""
    launched: int
    """Runs handed to the launcher."""
    statuses: dict[str, str]
    """run_id -> status of runs that finished while submit waited."""


def choose_profile(grid: Grid, local: bool, launcher: str | None) -> LauncherProfile:
    """``--launcher`` > ``local`` for ``--local`` > the grid's own launcher."""
    name = launcher or ("local" if local else grid.launcher)
    if name is None:
        raise UserError(f"{grid.path}: no launcher; give --launcher NAME or set 'launcher:'")
    return load_profile(name)


def check_data(grid: Grid, data_root: Path) -> None:
    """Prepare each dataset the grid uses (registered ones on first use) and check that it holds
    every run's evaluation windows, so that no run fails at its end for want of held-out text."""
    for dataset in sorted({r.dataset for r in grid.runs}):
        data = TokenData(ensure_prepared(dataset, data_root))
        for seq_len, eval_tokens in sorted(
            {(r.seq_len, r.eval_tokens) for r in grid.runs if r.dataset == dataset}
        ):
            try:
                data.eval_windows(eval_tokens, seq_len)
            except UserError as e:
                raise UserError(f"{grid.path}: dataset {dataset}: {e}") from None


def submit(
    grid_path: str | Path,
    *,
    root: Path,
    data_root: Path,
    local: bool = False,
    launcher: str | None = None,
    dry_run: bool = False,
    retry: Collection[str] = (),
    wait: bool | None = None,
    out: TextIO,
) -> SubmitReport:
    """Expand ``grid_path`` and launch its runs that have no result yet (see module doc).

    ``wait`` None leaves it to the launcher: local runs block, SLURM returns once queued.
    """
    bad = set(retry) - set(STATUSES)
    if bad:
        raise UserError(f"--retry: unknown state(s) {sorted(bad)}; valid: {', '.join(STATUSES)}")
    grid = load_grid(grid_path, local=local, data_root=data_root)
    profile = choose_profile(grid, local, launcher)
    runner = launcher_for(profile)
    if dry_run:
        out.write(plan.describe(grid.runs, grid.axes) + "\n")
        if hasattr(runner, "plan"):
            out.write(runner.plan(grid.runs) + "\n")
        return SubmitReport(grid.name, len(grid.runs), 0, 0, {})
    from harness.db import result_statuses  # DuckDB and Arrow: not needed by a dry run
    from harness.manifest import write_manifest

    check_data(grid, data_root)
    write_manifest(root, grid.name, grid.runs)
    if hasattr(runner, "reconcile"):  # rows for runs whose job died without writing one
        runner.reconcile(root, grid.name)
    done = result_statuses(root, grid.name)
    todo = [r for r in grid.runs if r.run_id not in done or done[r.run_id] in retry]
    if hasattr(runner, "exclude_queued"):
        todo = runner.exclude_queued(root, grid.name, todo)
    skipped = len(grid.runs) - len(todo)
    out.write(
        f"{grid.name}: {len(grid.runs)} runs planned ({grid.scale} scale); "
        f"skipped {skipped} with a result or already queued; launching {len(todo)} "
        f"on '{profile.name}'\n"
    )
    if not todo:
        return SubmitReport(grid.name, len(grid.runs), skipped, 0, {})
    options = {} if wait is None else {"wait": wait}  # each launcher has its own default
    report = runner.launch(todo, root, grid.name, data_root, **options)
    return SubmitReport(grid.name, len(grid.runs), skipped, report.launched, report.statuses)
