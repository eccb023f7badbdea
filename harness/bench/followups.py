"""The runs each phase adds after the grid's own, planned arm by arm.

``submit --extend --confirm`` plans over the whole grid, and counts extension rounds over every
run of it; a bench's grid is shared by every candidate benched under its protocol, so the bench
plans each arm on its own rows (:func:`harness.followup.planning.plan_extension` and
``plan_confirmation``, the same planners): each arm gets the protocol's rounds of extension
whatever earlier candidates used, and a baseline's plan, made from the same results, is the
same plan, the same runs, for every candidate. An arm whose tuning runs have no result yet
plans nothing; one whose extension has converged (or hit its limits) is confirmed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pandas as pd

from harness.core import paths
from harness.core.config import RunConfig
from harness.core.errors import UserError
from harness.grid.followup import ExtendSpec
from harness.grid.load import Grid


@dataclass(frozen=True, slots=True)
class Followups:
    """What the arms add to the grid's own runs."""

    runs: tuple[RunConfig, ...]
    """Runs earlier rounds added (submitted again: those without a result run) and new ones."""
    new: int
    """How many of them are planned now."""
    lines: tuple[str, ...]
    """The plan, line by line, each naming its arm."""


def _added(root: Path, grid: Grid, labels: Sequence[str]) -> list[RunConfig]:
    if not paths.manifest_path(root, grid.name).exists():
        return []
    from harness.store.manifest import read_manifest

    runs = read_manifest(root, grid.name).values()
    return [r for r in runs if r.scale == grid.scale and (r.extend_round or r.confirm)
            and r.label in labels]  # fmt: skip


def _results(root: Path, grid: Grid) -> pd.DataFrame:
    from harness.analysis.rows.load import select

    try:
        return select(grid.name, results=root, scale=grid.scale).frame("runs")
    except UserError:  # no result yet
        return pd.DataFrame({"run_id": pd.Series(dtype=str), "status": pd.Series(dtype=str)})


def plan_followups(grid: Grid, root: Path, labels: Sequence[str]) -> Followups:
    """Extension, then confirmation, for each arm in ``labels`` (module docstring)."""
    from harness.analysis.rows.direction import DEFAULT_METRIC, default_select, metric_goal
    from harness.analysis.rows.preparation import prepare, resolve_metric
    from harness.followup.planning import plan_confirmation, plan_extension
    from harness.grid.vary import vary

    added = _added(root, grid, labels)
    known = {r.run_id for r in added}
    df = _results(root, grid)
    change = partial(vary, grid)
    new: dict[str, RunConfig] = {}
    lines: list[str] = []
    for label in labels:
        tuning = {r.run_id: r for r in [*grid.runs, *added] if not r.confirm and r.label == label}
        pending = set(tuning) - set(df["run_id"])
        if pending:
            lines.append(f"{label}: {len(pending)} tuning run(s) have no result yet")
            continue
        mine = df[df["run_id"].isin(tuning)]
        metric = default_select(resolve_metric(mine, DEFAULT_METRIC)[0])
        goal = metric_goal(metric)
        rows = prepare(mine, metric, goal).rows
        if rows.empty:
            lines.append(f"{label}: no tuning run completed: nothing planned")
            continue
        ext = plan_extension(rows, tuning, grid.extend or ExtendSpec(), goal, change)
        lines += [f"{label}: {line}" for line in ext.lines]
        if ext.runs:
            new.update({r.run_id: r for r in ext.runs})
            continue
        conf = plan_confirmation(rows, tuning, grid.confirm_seeds, goal, change)
        new.update({r.run_id: r for r in conf.runs if r.run_id not in known})
        lines += [f"{label}: {line}" for line in conf.lines]
    return Followups((*added, *new.values()), len(new), tuple(lines))
