"""Runs planned from a grid's results: values beyond open edges (``submit --extend``) and each
cell's selected configuration on fresh seeds (``submit --confirm``).

Both read the tuning runs of one grid at one scale (the grid's own runs and earlier extension
rounds; confirmation runs never select) and plan nothing while any of them has no result yet.
A *cell* is a combination of the config columns that are not tuned hyperparameters (optimizer,
arm label's settings, batch size, ...); its best configuration is the one with the best mean over
seeds of the grid's loss (:func:`harness.analysis.rows.tuning.tune`).

Extension: for each cell and each extendable axis whose best value sits on an open edge
(:func:`harness.analysis.rows.edges.open_edge`, judged along the line through the best:
:func:`harness.analysis.rows.tuning.line_values`), the best configuration's runs (one per tuning
seed) are planned again at the next value on the axis's spacing, tagged with the round that adds
them (``extend_round``). A value beyond the grid's hard bounds is clipped to the bound; a best on
the bound is a limit reached; a best the bounds exclude is said in one line and not extended (a
bound never pulls a value back inside the searched range). Rounds stop when no best sits on an open
edge, or after the grid's ``extend.rounds``.

Confirmation: once tuning is done (and extension has converged when asked for), each cell's best
configuration on each confirmation seed (``confirm=True``).

Per arm (``per_arm``, ``harness.api.submit(per_arm=True)``, as ``harness bench`` plans): the same
planners over each arm label's runs on their own, so that each arm gets its own rounds (an arm
added to a grid later, or a grid name shared by grid files of other arms, as a bench's is).

The pure planners (:func:`plan_extension`, :func:`plan_confirmation`) take the rows; the CLI
calls :func:`follow_up`, which reads them, and hands its runs to ``launch.submit``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from harness.analysis.rows.edges import open_edge
from harness.analysis.rows.metric_choice import choose_metric
from harness.analysis.rows.preparation import prepare
from harness.analysis.rows.tuning import line_values, tune
from harness.core.catalogue import with_values
from harness.core.config import RunConfig
from harness.core.errors import UserError
from harness.core.result import RESULT_STATUSES
from harness.followup.selected import cells, is_null, matching
from harness.grid.followup import ExtendSpec
from harness.grid.load import Grid
from harness.grid.vary import vary
from harness.metrics.catalogue import Goal

Vary = Callable[[RunConfig, Sequence[str], Mapping[str, Any]], RunConfig | None]
"""(run, its tuned columns, changes) -> the run with those values changed: the grid's own
resolution (:func:`harness.grid.vary.vary`), or the values changed in place; None when a
changed value is computed from others (an expression) and cannot change alone."""


def in_place(run: RunConfig, tuned: Sequence[str], changes: Mapping[str, Any]) -> RunConfig:
    """``run`` with ``changes`` applied to its resolved values (no expression evaluated again)."""
    return with_values(run, **changes)


@dataclass(frozen=True, slots=True)
class Planned:
    """Runs one planner adds, and why."""

    runs: tuple[RunConfig, ...] = ()
    """The new runs (none already known)."""
    lines: tuple[str, ...] = ()
    """One line per planned value, limit reached or reason nothing was planned."""


@dataclass(slots=True)
class FollowUp:
    """What :func:`follow_up` found for a grid: the runs to add to the grid's own."""

    known: list[RunConfig] = field(default_factory=list)
    """Runs earlier follow-ups added (from the manifest): submitted again, so that those
    without a result run (skip and retry as for any run)."""
    new: list[RunConfig] = field(default_factory=list)
    """Runs planned now."""
    lines: list[str] = field(default_factory=list)
    """The plan, line by line."""

    @property
    def runs(self) -> tuple[RunConfig, ...]:
        """Every run to add to the grid's own."""
        return (*self.known, *self.new)


def _describe(best: pd.Series, keys: Sequence[str]) -> str:
    shown = [f"{k}={best[k]}" for k in keys if k in best.index and not is_null(best[k])]
    return ", ".join(shown[:4]) or "the grid"


def _cell_keys(rows: pd.DataFrame, keys: list[str]) -> list[str]:
    """The keys that vary between cells (the rest are constant: left out of descriptions)."""
    return [k for k in keys if rows[k].nunique(dropna=False) > 1]


def plan_extension(
    rows: pd.DataFrame,
    runs: Mapping[str, RunConfig],
    spec: ExtendSpec,
    goal: Goal = Goal.MIN,
    change: Vary = in_place,
) -> Planned:
    """The next round of values beyond open edges (module doc).

    Args:
        rows: the tuning rows (one per run, with ``run_id``, ``value`` and the config columns).
        runs: run_id -> config of every known run (the rows' included).
        spec: the grid's ``extend:`` section.
        goal: ``min`` or ``max`` for ``value``.
        change: how a run's values are changed (:data:`Vary`).
    """
    keys, over = cells(rows)
    if not over:
        return Planned(lines=("nothing is tuned in any cell: no edge to extend",))
    table = tune(rows, keys, over, goal)
    done_round = max((r.extend_round or 0 for r in runs.values()), default=0)
    round_ = done_round + 1
    new: dict[str, RunConfig] = {}
    lines = []
    shown_keys = _cell_keys(rows, keys)
    for _, best in table.iterrows():
        cell = rows[matching(rows, best, keys)]
        seeds = cell[matching(cell, best, over)]
        for axis in over:
            if not spec.allows(axis):
                continue
            edge = open_edge(axis, line_values(cell, best, over, axis), best[axis])
            if edge is None:
                continue
            low, high = spec.limits(axis)
            where = f"{_describe(best, shown_keys)}: {axis}={edge.best:g}"
            if not low <= edge.best <= high:
                lines.append(
                    f"{where} lies outside extend.bounds.{axis} [{low:g}, {high:g}]: "
                    "not extended (widen the bounds to include it)"
                )
                continue
            # clipped on the edge's own side only: never back into the searched range
            value = min(edge.next, high) if edge.side == "largest" else max(edge.next, low)
            if value == edge.best:
                lines.append(f"{where} is on the {edge.side} edge and at its bound: limit reached")
                continue
            if round_ > spec.rounds:
                lines.append(
                    f"{where} is on the {edge.side} edge, but {spec.rounds} round(s) "
                    "of --extend are done: limit reached"
                )
                continue
            moved = [change(runs[run_id], over, {axis: value}) for run_id in seeds["run_id"]]
            if any(m is None for m in moved):
                lines.append(
                    f"{where} is on the {edge.side} edge, but the grid computes "
                    f"{axis} from other values: not extended"
                )
                continue
            for m in moved:
                run = with_values(m, extend_round=round_, confirm=None)  # type: ignore[arg-type]  # m: not None (checked above)
                if run.run_id not in runs:
                    new.setdefault(run.run_id, run)
            lines.append(
                f"{where} is the {edge.side} tried: round {round_} adds {value:g} "
                f"({len(seeds)} seed(s))"
            )
    return Planned(tuple(new.values()), tuple(lines))


def plan_confirmation(
    rows: pd.DataFrame,
    runs: Mapping[str, RunConfig],
    seeds: Sequence[int],
    goal: Goal = Goal.MIN,
    change: Vary = in_place,
) -> Planned:
    """Each cell's best configuration on each confirmation seed (``confirm=True``).

    Args:
        rows: the tuning rows (as for :func:`plan_extension`).
        runs: run_id -> config of every known run.
        seeds: the confirmation seeds.
        goal: ``min`` or ``max`` for ``value``.
        change: how a run's values are changed (:data:`Vary`).
    """
    keys, over = cells(rows)
    table = tune(rows, keys, over, goal)
    new: dict[str, RunConfig] = {}
    lines = []
    shown_keys = _cell_keys(rows, keys)
    for _, best in table.iterrows():
        chosen = rows[matching(rows, best, keys + over)]
        first = runs[chosen["run_id"].iloc[0]]
        for s in seeds:
            moved = change(first, over, {"seed": s})
            if moved is None:  # a seed computed by an expression: nothing to confirm on
                continue
            run = with_values(moved, confirm=True, extend_round=None)
            if run.run_id not in runs:
                new.setdefault(run.run_id, run)
        picked = ", ".join(f"{a}={best[a]:g}" for a in over if not is_null(best[a]))
        lines.append(
            f"{_describe(best, shown_keys)}: confirm {picked or 'its one configuration'} "
            f"on seed(s) {', '.join(map(str, seeds))}"
        )
    return Planned(tuple(new.values()), tuple(lines))


def _results(root: Path, grid: Grid) -> pd.DataFrame:
    """Every result row of ``grid`` at its scale (empty before its first result)."""
    from harness.analysis.rows.load import select

    try:
        sel = select(grid.name, results=root, scale=grid.scale)
    except UserError:  # no results yet (at this scale)
        return pd.DataFrame({"run_id": pd.Series(dtype=str), "status": pd.Series(dtype=str)})
    return sel.frame("runs")


def follow_up(
    grid: Grid, root: Path, *, extend: bool, confirm: bool, per_arm: bool = False
) -> FollowUp:
    """The runs ``submit --extend`` / ``--confirm`` adds to ``grid``'s own (module doc).

    With ``per_arm``, each arm (each ``label`` of the grid's runs) is planned on its own rows:
    its own rounds of extension (runs of other labels in the results, from another grid file of
    the same name, count none), confirmed once its own extension has converged; an arm with a
    tuning run without a result (completed or diverged; a failed one too) plans nothing, so
    that arms are compared on whole budgets. Each line names its arm.

    Raises:
        UserError: ``confirm`` for a grid that declares no confirmation seeds.
    """
    if confirm and not grid.confirm_seeds:
        raise UserError(
            f"--confirm: {grid.path} declares no confirmation seeds; write e.g. "
            "seeds: {tune: 3, confirm: 3}"
        )
    added = _added(root, grid)
    df = _results(root, grid)
    if not per_arm:
        whole = _plan_part(grid, grid.runs, added, df, extend=extend, confirm=confirm)
        return FollowUp(added, whole.new, whole.lines)
    labels = list(dict.fromkeys(r.label for r in grid.runs))
    new: dict[str, RunConfig] = {}
    lines: list[str] = []
    for label in labels:
        own = [r for r in grid.runs if r.label == label]
        part = _plan_part(
            grid,
            own,
            [r for r in added if r.label == label],
            df,
            extend=extend,
            confirm=confirm,
            strict=True,
        )
        new.update((r.run_id, r) for r in part.new)
        lines += [f"{label}: {line}" for line in part.lines]
    return FollowUp([r for r in added if r.label in labels], list(new.values()), lines)


def _plan_part(
    grid: Grid,
    own: Sequence[RunConfig],
    added: Sequence[RunConfig],
    df: pd.DataFrame,
    *,
    extend: bool,
    confirm: bool,
    strict: bool = False,
) -> FollowUp:
    """The follow-ups of the tuning runs ``own`` and ``added`` (earlier rounds') from the
    results ``df``; ``strict``: a failed run blocks as one without a row does."""
    out = FollowUp()
    tuning = {r.run_id: r for r in [*own, *added] if not r.confirm}
    finished = df.loc[df["status"].isin(RESULT_STATUSES), "run_id"] if strict else df["run_id"]
    pending = sorted(set(tuning) - set(finished))
    ended = sorted(set(pending) & set(df["run_id"]))  # a row, but no result: failed, timeout...
    if ended and strict:
        out.lines.append(
            f"{len(ended)} tuning run(s) have no result (completed or diverged): "
            f"they ended without one; run them again with: harness submit "
            f"{grid.path} --retry failed,timeout,oom,cancelled"
        )
        return out
    if pending:
        out.lines.append(
            f"{len(pending)} tuning run(s) have no result yet: their follow-ups are planned "
            "once they finish"
        )
        return out
    tuning_rows = df[df["run_id"].isin(tuning)]
    choice = choose_metric(tuning_rows)  # as the analysis selects
    chosen, goal = choice.select_by, choice.select_goal
    rows = prepare(tuning_rows, chosen, goal).rows
    if rows.empty:
        out.lines.append("no tuning run completed: nothing planned")
        return out
    change = partial(vary, grid)
    if extend:
        planned = plan_extension(rows, tuning, grid.extend or ExtendSpec(), goal, change)
        out.new, out.lines = list(planned.runs), [*out.lines, *planned.lines]
        if planned.runs:
            return out
        out.lines.append(
            "--extend: no best on an open edge"
            if not planned.lines
            else "--extend: nothing more to add"
        )
    if confirm:
        planned = plan_confirmation(rows, tuning, grid.confirm_seeds, goal, change)
        known = {r.run_id for r in added}
        out.new = [r for r in planned.runs if r.run_id not in known]
        out.lines += planned.lines
    return out


def _added(root: Path, grid: Grid) -> list[RunConfig]:
    """Runs earlier follow-ups of ``grid`` added at its scale (from its manifest)."""
    from harness.core import paths
    from harness.store.manifest import read_manifest

    if not paths.manifest_path(root, grid.name).exists():
        return []
    return [
        r
        for r in read_manifest(root, grid.name).values()
        if r.scale == grid.scale and (r.extend_round or r.confirm)
    ]


def finished(root: Path, grid: Grid) -> frozenset[str]:
    """run_ids of ``grid``'s runs at its scale with a result (completed or diverged)."""
    df = _results(root, grid)
    return frozenset(df.loc[df["status"].isin(RESULT_STATUSES), "run_id"])
