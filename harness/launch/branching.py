"""Branch runs executed: what a run starts from and what it saves for its branches.

``submit`` writes the grid's branch plan (:mod:`harness.grid.branches`) next to its manifest and
hands the runs to the launcher parents first. A run reads the plan when it starts (the plan
and its printing import neither torch nor Arrow: a dry run prints it):

- A parent saves its state at each branch point whose branch has no row yet
  (:attr:`~harness.train.checkpoint.Checkpointing.branch_points`).
- A branch starts from the file its parent saved (:attr:`~harness.train.checkpoint.
  Checkpointing.start_from`) unless it has a checkpoint of its own (a branch interrupted in its
  cooldown resumes from its own checkpoint: nothing is trained twice). Without the file it
  waits while its parent trains (its run lock is held) or has not started yet (for
  :data:`START_WAIT_S`), and trains alone, from step 0, when its parent ended without reaching
  the branch point (failed, diverged, stopped) or never started: the run's log says so, and its
  row has ``branch_of`` NULL. Its file is removed once its row holds a result, kept otherwise
  (a retry starts from it).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.core import paths
from harness.core.files import atomic_write
from harness.core.result import RESULT_STATUSES, Status
from harness.grid.branches import BranchPlan, from_json, plan_branches
from harness.grid.load import Grid
from harness.launch.profile import LauncherProfile

START_WAIT_S = 60.0
"""Seconds a branch waits for a parent that has neither started nor ended (a launcher that
started the branch first) before it trains alone."""

POLL_S = 0.2
"""Seconds between a waiting branch's looks at its parent."""


class WaitStopped(Exception):
    """A branch was asked to stop while it waited for its parent (before its first step)."""


def plan_for(grid: Grid, profile: LauncherProfile[Any]) -> BranchPlan:
    """The grid's branch plan: its ``branch:``, else the launcher profile's."""
    return plan_branches(grid.runs, grid.branch or profile.branch)


def write_plan(root: Path, grid: str, plan: BranchPlan) -> None:
    """Record ``plan`` for the grid's runs (replacing an earlier submit's)."""
    text = json.dumps(plan.to_json()).encode()
    atomic_write(paths.branch_plan_path(root, grid), lambda fh: fh.write(text))


def read_plan(root: Path, grid: str) -> BranchPlan:
    """The plan the last submit wrote; an empty one when there is none (an older submit)."""
    try:
        return from_json(json.loads(paths.branch_plan_path(root, grid).read_text()))
    except FileNotFoundError:
        return BranchPlan()


def families(root: Path, grid: str) -> dict[str, str]:
    """run_id -> its family's parent (the parent's own too) for the runs of the grid's plan: a
    SLURM task trains a family, parent first (:func:`harness.launch.slurm.arrays.
    group_into_tasks`)."""
    plan = read_plan(root, grid)
    return {p: p for p in plan.parents} | {b.run_id: b.parent for b in plan.branches}


def branch_points(root: Path, grid: str, run_id: str) -> tuple[tuple[int, Path], ...]:
    """What parent ``run_id`` saves: (step, file) of each of its branches without a row."""
    from harness.store.rows import newest_rows  # Arrow: not for a dry run

    branches = read_plan(root, grid).points_of(run_id)
    if not branches:
        return ()
    have_rows = newest_rows(root, grid, [b.run_id for b in branches], ["status"])
    return tuple(
        (b.step, paths.branch_point_path(root, grid, b.run_id))
        for b in branches
        if b.run_id not in have_rows
    )


def start_from(
    root: Path,
    grid: str,
    run_id: str,
    should_stop: Callable[[], bool] | None = None,
    log: Callable[[str], None] = print,
) -> Path | None:
    """The file branch ``run_id`` starts from, once its parent wrote it; None: the run trains
    from its own checkpoint or from step 0 (not a branch, or its parent cannot give it its
    state: ``log`` says why). Waits while the parent trains toward the branch point.

    Raises:
        WaitStopped: ``should_stop()`` asked the run to stop while it waited.
    """
    branch = read_plan(root, grid).parent_of(run_id)
    if branch is None:
        return None
    point = paths.branch_point_path(root, grid, run_id)
    own = paths.checkpoint_path(root, grid, run_id)
    deadline = time.monotonic() + START_WAIT_S
    while True:
        if point.exists() or own.exists():
            return point if point.exists() else None
        why = _cannot_wait(root, grid, branch.parent, branch.step, point, deadline)
        if why is not None:
            log(f"[{run_id}] trained alone from step 0: its parent {branch.parent} {why}")
            return None
        if should_stop is not None and should_stop():
            raise WaitStopped(f"stopped while waiting for {branch.parent}")
        time.sleep(POLL_S)


def _cannot_wait(
    root: Path, grid: str, parent: str, step: int, point: Path, deadline: float
) -> str | None:
    """Why a branch stops waiting for ``parent``'s state at ``step`` (in ``point``); None: it
    waits on."""
    from harness.store.rows import newest_rows
    from harness.store.status import training_now

    if training_now(root, grid, [parent]):
        return None
    row = newest_rows(root, grid, [parent], ["status", "steps_done"]).get(parent)
    if row is not None and not point.exists():  # the point may come just before the row
        return (
            f"ended {row['status']} after {row['steps_done']} steps without writing its "
            f"state at step {step}"
        )
    if row is None and time.monotonic() > deadline:
        return f"has not started within {START_WAIT_S:.0f} s"
    return None


def finished(root: Path, grid: str, run_id: str, status: Status) -> None:
    """A branch's row is written: its first state is removed once the row holds a result."""
    if status in RESULT_STATUSES:
        paths.branch_point_path(root, grid, run_id).unlink(missing_ok=True)
