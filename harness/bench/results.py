"""The bench's one door to the analysis: its rows, each arm's selection, its edges, all through
:mod:`harness.services`.

The rows are exactly the runs of this bench, selected by ``run_id`` from the derived grid's plan
(:func:`bench_run_ids`: its tuning runs, then the extension and confirmation runs its phases
planned from the results), never by arm label: a grid's folder is shared by every candidate and
every version of the protocol benched under its name, so rows of another protocol's seeds or of
another file of the same name are not this bench's.

The selection is the one ``submit --confirm`` made (:func:`harness.services.cells` and
:func:`harness.services.tuned` over the tuning rows, by the grid's loss), so the verdict reports the
configurations that were confirmed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from harness import services
from harness.bench.derive import Derived, phase_plan
from harness.core.catalogue import flat
from harness.core.errors import UserError
from harness.metrics.catalogue import Goal

if TYPE_CHECKING:
    from harness.core.config import RunConfig
    from harness.services import Tuned

LOSS = "val_loss"
"""The metric compared: the held-out loss at the end of the run (selection by it and by
perplexity, the planners' default, pick the same configurations: one is the other's log)."""
VALUE = "value"
"""Column of each row's metric (the worst value for a diverged run)."""
LR_EDGE = "lr_edge"
"""Column of :func:`selection`'s table: the side of the searched lrs the best sits on after
extension (empty when inside)."""


@dataclass(frozen=True, slots=True)
class Rows:
    """The bench's result rows, prepared."""

    metric: str
    """The metric compared (the grid's loss, read at the end of the run)."""
    goal: Goal
    """Which direction of ``metric`` is better."""
    tuning: pd.DataFrame
    """Tuning rows (extension rounds included), with ``value``."""
    confirm: pd.DataFrame
    """Confirmation rows, with ``value``."""
    keys: tuple[str, ...]
    """Columns that define an arm's cell (label, batch size, budget, ...)."""
    over: tuple[str, ...]
    """The tuned columns."""


def of_arms(labels: Sequence[str]) -> str:
    """The ``where`` filter (SQL) of the rows of the arms ``labels`` (the report card's figures;
    the verdict reads :func:`of_runs`)."""
    quoted = ", ".join("'" + label.replace("'", "''") + "'" for label in labels)
    return f"label IN ({quoted})"


def of_runs(run_ids: Sequence[str]) -> str:
    """The ``where`` filter (SQL) of the rows of the runs ``run_ids``."""
    quoted = ", ".join("'" + r.replace("'", "''") + "'" for r in run_ids) or "NULL"
    return f"run_id IN ({quoted})"


def bench_run_ids(derived: Derived, root: Path, data_root: Path | None = None) -> list[str]:
    """The run_ids of the bench of ``derived``: the derived grid's runs and the follow-ups its
    phases plan from the results so far (:func:`harness.bench.derive.phase_plan`; the
    sequential stages' confirmation runs are in its manifest once planned), of those
    follow-ups only the ones of this protocol: an extension run on a tuning seed, a
    confirmation run on a seed of one of its stages, each of a configuration of the grid's own
    but for its lr (the grid's manifest also holds the follow-ups of every earlier version of
    the protocol benched under its name)."""
    planned = phase_plan(derived, root, data_root)
    own = {r.run_id for r in planned.grid.runs}
    shapes = {_shape(r) for r in planned.grid.runs}
    p = derived.protocol
    confirm = p.seeds_at(len(p.stages.stages) - 1)  # every stage's seeds
    out = []
    for r in planned.runs:
        seeds = confirm if r.confirm else p.tune_seeds
        if r.run_id in own or (r.execution.seed in seeds and _shape(r) in shapes):
            out.append(r.run_id)
    return out


_FOLLOWED = ("lr", "seed", "extend_round", "confirm")
"""Fields a follow-up run changes from the grid's run it follows."""


def _shape(run: RunConfig) -> str:
    """The run's configuration but for the fields a follow-up changes."""
    fields = {k: v for k, v in flat(run).items() if k not in _FOLLOWED}
    return json.dumps(fields, sort_keys=True, default=str)


def load_rows(root: Path, grid: str, run_ids: Sequence[str]) -> Rows | None:
    """The rows of the runs ``run_ids`` in ``grid`` (None before the first result)."""
    try:
        found = services.rows(grid, results=root, scale="full", where=of_runs(run_ids), metric=LOSS)
    except UserError:  # no result yet
        return None
    rows = found.frame
    confirmed = rows["confirm"].fillna(False).astype(bool)
    tuning = rows[~confirmed]
    if tuning.empty:
        return None
    keys, over = services.cells(tuning)  # the arm's label is a key too (a cell is one arm's)
    return Rows(found.metric, found.goal, tuning, rows[confirmed], ("label", *keys), tuple(over))


def selection(rows: Rows) -> Tuned:
    """Each arm's selected configuration per cell: :attr:`~harness.api.Tuned.best` has one row
    per cell of ``rows.keys``, with ``mean`` (tuning seeds), ``configs``, ``runs``,
    ``diverged`` and :data:`LR_EDGE` (absent when lr is not tuned);
    :meth:`~harness.api.Tuned.line` gives the lr sensitivity."""
    return services.tuned(rows.tuning, rows.goal, keys=rows.keys, over=rows.over)
