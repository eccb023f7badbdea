"""``harness analyze targets`` and ``harness analyze profiles``: each run's tokens- and
time-to-target, and AlgoPerf-style performance profiles of the arms over cells.

The target comes from ``--target`` (on ``--curve``), else from the ``target:`` the grid YAMLs
declare (their ``local:`` one at local scale).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from harness.analysis.rows.arm_labels import add_methods, panel_keys
from harness.analysis.rows.axes import check_cells, check_columns, varying_within
from harness.analysis.rows.conditions import METHOD_EXTRAS, auto_over, check_pool
from harness.analysis.rows.load import Selection, select
from harness.analysis.rows.preparation import require_rows
from harness.analysis.stats import METHOD, performance_profiles
from harness.analysis.stats.reaching import CROSSING_NOTES, CROSSINGS, Crossing, reach_all
from harness.analysis.stats.reaching import reading_notes as run_notes
from harness.core.errors import UserError, unknown_choice
from harness.core.result import RESULT_STATUSES
from harness.core.targets import Target, parse_target


@dataclass(frozen=True, slots=True)
class TargetQuery:
    """What both commands (and the ``performance_profile`` figure) read."""

    grid: str | Sequence[str] | None
    """Grid YAML paths or names (None: every grid under the results root)."""
    target: float | None = None
    """``--target``: the value (None: the grids' declared ``target:``)."""
    curve: str | None = None
    """``--curve``: the curve column of ``--target`` (None: ``train_loss``)."""
    results: str | None = None
    """Results root."""
    where: str | None = None
    """SQL predicate restricting the rows."""
    scale: str | None = None
    """``full``, ``local`` or None (the only one present)."""
    pool: tuple[str, ...] = ()
    """Conditions pooled (``--pool``): not cells of a profile, tuned over instead."""


def find_target(q: TargetQuery, scale: str) -> Target | None:
    """``--target``, else the one target the grid YAMLs declare at ``scale``, else None.

    Raises:
        UserError: a bad ``--target``/``--curve``, or grids declaring different targets.
    """
    if q.target is not None:
        return parse_target(q.target, "--target", q.curve)
    if q.curve is not None:
        raise UserError("--curve names the column of --target; give --target too")
    from harness.grid.load import declared_target

    args = [q.grid] if isinstance(q.grid, str) else list(q.grid or [])
    paths = [Path(a) for a in args if Path(a).suffix in (".yaml", ".yml") and Path(a).is_file()]
    found = {t for p in paths if (t := declared_target(p, scale == "local")) is not None}
    if len(found) > 1:
        named = ", ".join(sorted(t.describe() for t in found))
        raise UserError(f"the grids declare different targets ({named}); give one with --target")
    return found.pop() if found else None


NO_TARGET = (
    "no target: give --target VALUE (and --curve train_loss|val_loss), or declare target: in "
    "the grid YAML and name the YAML as GRID"
)


def runs(
    q: TargetQuery, crossing: Crossing = "interpolated"
) -> tuple[Selection, pd.DataFrame, Target, list[str]]:
    """The result rows with their methods and steps, tokens and times to target
    (:func:`harness.analysis.stats.reaching.reach_all`, read by ``crossing``), the target, and
    notes."""
    if crossing not in CROSSINGS:
        raise unknown_choice("--crossing", crossing, CROSSINGS)
    sel = select(q.grid, results=q.results, scale=q.scale, where=q.where)
    target = find_target(q, sel.scale)
    if target is None:
        raise UserError(NO_TARGET)
    rows = sel.frame("runs")
    status = rows["status"].astype(str)
    faults = int((~status.isin(RESULT_STATUSES)).sum())
    rows = add_methods(rows[status.isin(RESULT_STATUSES)].reset_index(drop=True))
    require_rows(rows, f"in grid {sel.grid!r}")
    check_pool(rows, q.pool)
    rows = reach_all(rows, sel.frame("curves"), target.column, target.value, crossing)
    notes = [f"target: {target.describe()} (--crossing {crossing}: {CROSSING_NOTES[crossing]})"]
    notes += [f"{faults} run(s) left out (failed, oom, timeout or cancelled)"] if faults else []
    notes += sel.missing().notes()
    notes += run_notes(rows)
    return sel, rows, target, notes


#: Columns of a run's length: in a to-target comparison each arm's own choice, no cell, unless
#: named in ``--by`` or they vary within an arm (a budget sweep).
RUN_LENGTH = ("tokens", "steps")


def own_lengths(rows: pd.DataFrame, by: Sequence[str] = ()) -> list[str]:
    """The run-length columns that are each arm's own: they vary, but not within an arm (one
    length per method), and are not in ``by``."""
    cols = [c for c in RUN_LENGTH if c in rows.columns and c not in by]
    vary = [c for c in cols if rows[c].nunique(dropna=False) > 1]
    return [c for c in vary if c not in varying_within(rows, [METHOD], [c])]


def check_arms_per_cell(table: pd.DataFrame, keys: Sequence[str], arm: str = METHOD) -> None:
    """Refuse a comparison in which every cell holds a single arm (nothing is compared).

    Raises:
        UserError: naming the cell columns and how to merge the cells.
    """
    if not keys or table.empty:
        return
    if int(table.groupby(list(keys), dropna=False)[arm].nunique().max()) < 2:
        raise UserError(
            f"every cell of {', '.join(keys)} holds a single arm: nothing to compare; pool "
            f"those columns (--pool {','.join(keys)}) or choose other --by columns"
        )


def tuned_columns(rows: pd.DataFrame, by: Sequence[str]) -> list[str]:
    """The hyperparameters that vary within a cell of ``by`` and an arm."""
    return auto_over(rows, [*by, *_method_columns(rows)])


def _method_columns(rows: pd.DataFrame) -> list[str]:
    """The config columns that tell arms apart (the optimizer and its variants)."""
    return [c for c in ("optimizer", *METHOD_EXTRAS) if c in rows.columns]


def profile_table(
    rows: pd.DataFrame,
    by: Sequence[str],
    over: Sequence[str],
    measure: str,
    pool: Sequence[str] = (),
) -> tuple[pd.DataFrame, list[str]]:
    """The per-cell ratios of :func:`harness.analysis.stats.performance_profiles.ratios` of
    ``rows`` (with methods and times to target), and the cell columns used: ``by`` and every
    other condition that varies, but those pooled (tuned over instead)."""
    check_columns(rows, by, "--by")
    check_columns(rows, over, "--over")
    keys = [*by, *panel_keys(rows, [*pool, *over, *own_lengths(rows, by)], by)]
    check_arms_per_cell(rows, keys)
    arms = [*_method_columns(rows), METHOD]
    over = list(over) or tuned_columns(rows, keys)
    mine = [*pool, *own_lengths(rows, by)]
    over += [p for p in varying_within(rows, [*keys, *arms], mine) if p not in over]
    check_cells(rows, [*keys, *arms], over)
    times = performance_profiles.arm_times(rows, keys, over, measure)
    return performance_profiles.ratios(times, keys), keys
