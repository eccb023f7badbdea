"""One function per ``harness analyze`` command: load the rows, tune, run the statistic.

Each returns an :class:`~harness.analysis.questions.answer.Answer` (a table and notes); the CLI only
prints it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import pandas as pd

from harness.analysis.rows import caveats
from harness.analysis.rows.axes import check_cells, check_columns, varying_within
from harness.analysis.rows.conditions import (
    POOL_FLAG,
    auto_over,
    check_pool,
    declared_expressions,
    open_conditions,
)
from harness.analysis.rows.direction import DEFAULT_METRIC, GoalChoice
from harness.analysis.rows.gridref import declared_derived_axes
from harness.analysis.rows.load import Selection, select
from harness.analysis.rows.metric_choice import choose_metric
from harness.analysis.rows.preparation import Prepared, prepare, require_rows
from harness.analysis.rows.reads import columns_read
from harness.analysis.rows.selectors import Selector, broadcast, inapplicable, label_arms
from harness.analysis.rows.tuning import confirmed
from harness.analysis.stats import ARM
from harness.analysis.stats.defaults import TUNED_MODES as TUNED_MODE_CHOICES
from harness.analysis.stats.defaults import Alternative, TunedMode
from harness.core.errors import UserError, unknown_choice
from harness.metrics.catalogue import Goal


@dataclass(frozen=True, slots=True)
class Query:
    """The options every command shares."""

    grid: str | Sequence[str] | None
    """A grid YAML path or a grid name, several of them (arms compared across grids), or None
    (every grid under the results root)."""
    results: str | None = None
    """Results root (None: ``$HARNESS_RESULTS`` or ``./results``)."""
    where: str | None = None
    """SQL predicate restricting the rows."""
    scale: str | None = None
    """``full``, ``local`` or None (the only one present)."""
    metric: str = DEFAULT_METRIC
    """The column analysed."""
    goal: GoalChoice = "auto"
    """``min``, ``max`` or ``auto`` (the metric's known direction)."""
    select_by: str | None = None
    """The metric whose mean over seeds picks each cell's best configuration (None: the
    grid's loss, :func:`~harness.analysis.rows.direction.default_select`)."""
    pool: tuple[str, ...] = ()
    """Conditions pooled (``--pool``): not cells, tuned over instead
    (:mod:`harness.analysis.rows.conditions`); every other condition that varies is a cell."""
    selection: Selection | None = dataclasses.field(default=None, compare=False, repr=False)
    """The open selection of these grids, scale and predicate to read (``harness report``
    reads the rows of 100,000 runs once for its figures and tables); None: one is opened."""


@dataclass(frozen=True, slots=True)
class Tuned:
    """Tuned results of some cells."""

    table: pd.DataFrame
    """One row per cell: best configuration and its statistics
    (:func:`harness.analysis.rows.tuning.tune`)."""
    seeds: pd.DataFrame
    """The runs of each cell's best configuration, with ``value``."""
    over: list[str]
    """The columns tuned over."""
    notes: list[str]
    """Notes on the rows and the tuning."""
    keys: list[str] = dataclasses.field(default_factory=list)
    """Every column of a cell: the keys asked for and :attr:`added`."""
    added: list[str] = dataclasses.field(default_factory=list)
    """The conditions that varied inside the cells asked for, made cells by default
    (:func:`~harness.analysis.rows.conditions.open_conditions`): a question groups its
    statistic by its ``by`` and these."""


def load(q: Query, named: Sequence[str] | None = None) -> tuple[Prepared, Goal]:
    """The prepared rows of the query and the metric's goal. ``named``: the question reads
    no column of the rows but those of a tuned table and these (its ``--by`` and ``--over``),
    so the others are not read (:func:`~harness.analysis.rows.reads.columns_read`); None: every
    column."""
    sel = q.selection or select(q.grid, results=q.results, scale=q.scale, where=q.where)
    if named is None:
        frame = sel.frame("runs")
    else:
        kept = columns_read(sel.columns_of("runs"), q.metric, q.select_by, named)
        frame = sel.frame("runs", kept)
    choice = choose_metric(frame, q.metric, q.goal, q.select_by)
    prep = prepare(frame, choice.metric, choice.goal, choice.select_by, choice.select_goal)
    require_rows(prep.rows, f"in grid {sel.grid!r} with {choice.metric}")
    derived = [*caveats.derived(declared_derived_axes(q.grid), prep.rows), *sel.missing().notes()]
    check_pool(prep.rows, q.pool)
    prep = dataclasses.replace(
        prep,
        readings=(*choice.notes, *derived),
        expressions=tuple(declared_expressions(q.grid)),
        pool=tuple(q.pool),
    )
    return prep, choice.goal


def tuned(prep: Prepared, goal: Goal, keys: Sequence[str], over: Sequence[str]) -> Tuned:
    """Tune each cell of ``keys`` over ``over`` (empty: the hyperparameters that vary, but
    those that follow other fields); the conditions that vary inside a cell of ``keys`` and
    are not pooled (``prep.pool``) become cell columns too, before the arm."""
    rows = prep.rows
    check_columns(rows, [k for k in keys if k != ARM], "--by")
    check_columns(rows, over, "--over")
    for flag, other in (("--over", over), (POOL_FLAG, prep.pool)):
        if overlap := set(keys) & set(other):
            raise UserError(f"{flag} and --by share column(s) {', '.join(sorted(overlap))}")
    added = open_conditions(rows, keys, [*prep.pool, *over])  # --over batch_size pools it too
    keys = [k for k in keys if k != ARM] + added + [ARM] * (ARM in keys)
    over = list(over) or auto_over(rows, keys, prep.expressions)
    pooled = [p for p in varying_within(rows, keys, prep.pool) if p not in over]
    over += pooled
    check_cells(rows, keys, over)
    tested = confirmed(rows, keys, over, goal, prep.select_goal)
    table = tested.table
    notes = [
        *prep.notes(),
        *_cell_notes(added, pooled),
        f"tuned over: {', '.join(over) or 'nothing (one configuration per cell)'}",
    ]
    if prep.select and over:
        notes.append(
            f"each cell's configuration selected by the mean {prep.select} over seeds "
            "(column select_mean); the table reports the metric there"
        )
    notes += [tested.note] if tested.note else []
    notes += edge_notes(table, keys, listed=ARM in keys)
    seeds = tested.seeds
    notes += caveats.one_seed(table, keys) + caveats.long_horizons(table, seeds)
    if ARM in keys:  # an arm to which a --by column does not apply joins every cell of it
        pairs = inapplicable(rows, [k for k in keys if k != ARM])
        table, seeds = broadcast(table, pairs), broadcast(seeds, pairs)
        notes += [f"{arm} has no {col}: it joins every {col} cell" for arm, col in pairs]
    return Tuned(table=table, seeds=seeds, over=over, notes=notes, keys=keys, added=added)


def _cell_notes(added: Sequence[str], pooled: Sequence[str]) -> list[str]:
    out = []
    if added:
        names = ", ".join(added)
        out.append(
            f"cells by {names} too: conditions that vary are cells unless pooled "
            f"({POOL_FLAG} {','.join(added)} tunes over them instead)"
        )
    if pooled:
        out.append(f"pooled ({POOL_FLAG}): {', '.join(pooled)}, tuned over as hyperparameters")
    return out


#: Edge notes listed one by one, at most.
MAX_EDGE_NOTES = 10


def edge_notes(table: pd.DataFrame, keys: Sequence[str], *, listed: bool) -> list[str]:
    """Notes on best values at the edge of the searched range: a count pointing at the
    ``edge`` column, or (``listed``, for tables without that column) one line per cell."""
    edged = table[table["edge"] != ""]
    if edged.empty:
        return []
    if not listed:
        return [f"{len(edged)} cell(s) have a best value on the edge of the range (column edge)"]
    lines = [
        f"edge: {', '.join(f'{k}={r[k]}' for k in keys)}: {r['edge']}"
        for _, r in edged.head(MAX_EDGE_NOTES).iterrows()
    ]
    more = len(edged) - MAX_EDGE_NOTES
    return lines + ([f"... and {more} more edge(s): see harness analyze best"] if more > 0 else [])


#: Values of ``--tuned``: each arm's value at its best grid point, or at its fitted optimum.
TUNED_MODES = TUNED_MODE_CHOICES


def tuned_by(
    prep: Prepared,
    goal: Goal,
    keys: Sequence[str],
    over: Sequence[str],
    mode: TunedMode = "grid",
    axis: str = "lr",
) -> Tuned:
    """:func:`tuned`, then with ``mode`` ``fit`` each seed's value replaced by its value at the
    cell's fitted optimum of ``axis`` (:func:`harness.analysis.stats.optimum_fit.fitted_seeds`).

    Raises:
        UserError: an unknown mode, or ``axis`` is not tuned over.
    """
    if mode not in TUNED_MODES:
        raise unknown_choice("--tuned", mode, TUNED_MODES)
    t = tuned(prep, goal, keys, over)
    if mode == "grid":
        return t
    if axis not in t.over:
        raise UserError(
            f"--tuned fit: {axis!r} is not tuned over here (tuned over: "
            f"{', '.join(t.over) or 'nothing'}); name the axis with --fit-axis"
        )
    from harness.analysis.stats import fitted_seeds  # scipy: only for --tuned fit

    along_axis = tuned(prep, goal, [*t.keys, axis], [o for o in t.over if o != axis])
    seeds, notes = fitted_seeds(along_axis.table, along_axis.seeds, t.keys, axis, goal)
    notes.append(
        f"--tuned fit: each seed's value is its own quadratic in log({axis}) through the "
        f"points of the cell's fit, at the fitted optimum (see analyze optimum); the {axis} "
        "shown in tables is the best grid point"
    )
    return dataclasses.replace(t, seeds=seeds, notes=[*t.notes, *notes])


def resolve_alternative(goal: Goal, alternative: Alternative | Literal["auto"]) -> Alternative:
    """``auto`` -> b better than a: ``less`` for a lower-is-better metric, else ``greater``."""
    if alternative != "auto":
        return alternative
    return "less" if goal == "min" else "greater"


def hypothesis(a: str, b: str, alternative: Alternative) -> str:
    """The alternative hypothesis about arm ``b`` against arm ``a``, in words (``alternative``:
    a resolved one, ``less``, ``greater`` or ``two-sided``)."""
    if alternative == "two-sided":
        return f"H1: {b} differs from {a} (two-sided)"
    return f"H1: {b} {alternative} than {a}"


def arms_tuned(
    q: Query,
    arms: dict[str, Selector],
    by: Sequence[str],
    over: Sequence[str],
    *,
    others: bool = False,
    x: str | None = None,
    tuned_mode: TunedMode = "grid",
    fit_axis: str = "lr",
) -> tuple[Tuned, Goal]:
    """What every command comparing arms starts with: the query's rows labelled by arm, tuned
    per cell of ``by`` (then ``x``, then the arm) over ``over`` (:func:`tuned_by`).

    Args:
        q: the query.
        arms: option flag -> the rows of that arm (``{"--a": a, "--b": b}``).
        by: cell columns.
        over: columns tuned over (empty: what varies).
        others: the rows of no arm are arms too, one per label (``analyze gap``).
        x: a column every selected run has a positive number in (crossover's, speedup's).
        tuned_mode: ``--tuned`` (:data:`TUNED_MODES`).
        fit_axis: ``--fit-axis``.

    Returns:
        The tuned cells and the metric's goal.

    Raises:
        UserError: an arm selects no row, ``x`` is not positive everywhere, or what
            :func:`tuned_by` refuses.
    """
    prep, goal = load(q)
    rows = label_arms(prep.rows, arms, others=others)
    if x is not None:
        _check_positive(rows, x)
    keys = [*by, *([x] if x is not None else []), ARM]
    return tuned_by(with_rows(prep, rows), goal, keys, over, tuned_mode, fit_axis), goal


def with_rows(prep: Prepared, rows: pd.DataFrame) -> Prepared:
    """``prep`` restricted to ``rows`` (the arms' rows): diverged runs recounted there."""
    diverged = int((rows["status"] == "diverged").sum())
    return dataclasses.replace(prep, rows=rows, diverged=diverged)


def _check_positive(rows: pd.DataFrame, x: str) -> None:
    check_columns(rows, [x], "--x")
    col = rows[x]
    if not pd.api.types.is_numeric_dtype(col) or col.isna().any() or (col <= 0).any():
        raise UserError(f"--x {x!r}: needs a positive number in every selected run")
