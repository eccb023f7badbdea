"""A run of a grid with some values changed, resolved as the grid resolves its points: the runs
``submit --extend`` and ``--confirm`` add (``harness.followup.planning``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.core.catalogue import FIELDS, flat, with_values
from harness.core.config import RunConfig
from harness.core.errors import UserError
from harness.grid.load import Grid


def vary(
    grid: Grid, run: RunConfig, tuned: Sequence[str], changes: Mapping[str, Any]
) -> RunConfig | None:
    """``run`` with some values changed, resolved as ``grid`` resolves its points, so that an
    expression over a changed value is evaluated again (``lr_min: "0.1 * lr"``).

    ``run`` is a run of the grid or one an earlier follow-up added: the grid point it comes
    from is the first whose values, with ``run``'s ``tuned`` values (those the point does not
    compute by an expression) and seed put in, resolve to ``run`` itself. Without one (a grid
    that changed since), the values are changed in place.

    Returns:
        None when a changed value is computed by an expression of the point (it cannot change
        alone), else the changed run.
    """
    if grid.resolver is not None:
        own = flat(run)
        for point, base in zip(grid.points, grid.runs, strict=False):
            if base.optim.optimizer != run.optim.optimizer or base.label != run.label:
                continue
            derived = {
                k
                for k, v in point.values.items()
                if isinstance(v, str) and k in FIELDS and FIELDS[k].type in (int, float)
            }
            put = {k: own[k] for k in tuned if own.get(k) is not None and k not in derived}
            values = {**point.values, **put, "seed": run.execution.seed}
            try:
                same = grid.resolver.resolve(values, point.describe()).run_id == run.run_id
            except UserError:
                continue
            if same:
                if derived & changes.keys():
                    return None
                return grid.resolver.resolve({**values, **changes}, point.describe())
    return with_values(run, **changes)
