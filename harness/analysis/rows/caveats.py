"""Notes that stop a misreading, attached to every table that tunes (``commands.tuned``).

- An EMA whose horizon 1 / (1 - beta) is longer than a third of the run's steps: its average
  has not forgotten its start (bias correction aside), so the run says little about that beta
  at a realistic length.
- One seed: no interval and no test is possible there.
- An axis whose searched values were derived from the quantity being concluded about (a grid's
  ``derived_axes: {lr: batch_size}``: lr lists built per batch size): a trend of the best value
  along it is partly built into the grid.

(Best values on the edge of the searched range, and a reference arm beaten by another arm, are
noted by ``commands.edge_notes`` and ``answers.gap.beaten_reference``.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from harness.core.catalogue import AXIS_SCALES
from harness.core.fields import Scale

#: An EMA horizon longer than this fraction of the run's steps is noted.
HORIZON_FRACTION = 1 / 3
#: Cells listed by name in a note, at most.
MAX_LISTED = 3

EMA_AXES = tuple(name for name, scale in AXIS_SCALES.items() if scale == Scale.DECAY)
"""Columns that are EMA rates (declared on the decay scale: beta1, beta2, momentum)."""


def long_horizons(table: pd.DataFrame, seeds: pd.DataFrame) -> list[str]:
    """A note per EMA column whose tuned value's horizon exceeds a third of the run's steps."""
    if "steps" not in seeds.columns:
        return []
    out = []
    for axis in (a for a in EMA_AXES if a in seeds.columns):
        rows = seeds[[axis, "steps"]].dropna().drop_duplicates()
        beta, steps = rows[axis].to_numpy(float), rows["steps"].to_numpy(float)
        with np.errstate(divide="ignore"):
            horizon = 1.0 / (1.0 - beta)
        long = horizon > HORIZON_FRACTION * steps
        if long.any():
            worst = int(np.argmax(horizon / steps * long))
            out.append(
                f"{axis}={beta[worst]:g} averages over ~{horizon[worst]:.0f} steps, more than a "
                f"third of the run's {steps[worst]:.0f} steps ({int(long.sum())} tuned "
                "configuration(s)): the EMA has not forgotten its start; such a beta is not "
                "tested at a realistic run length"
            )
    return out


def one_seed(table: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    """A note when some cell's tuned configuration has a single seed."""
    if "n" not in table.columns:
        return []
    single = table[table["n"] == 1]
    if single.empty:
        return []
    shown = [
        ", ".join(f"{k}={r[k]}" for k in keys) or "the cell"
        for _, r in single.head(MAX_LISTED).iterrows()
    ]
    more = f" and {len(single) - MAX_LISTED} more" if len(single) > MAX_LISTED else ""
    return [
        f"one seed in {len(single)} cell(s) ({'; '.join(shown)}{more}): no interval and no test "
        "there, and one seed of a short run can move a cell's ranking"
    ]


def derived(declared: Mapping[str, str], rows: pd.DataFrame) -> list[str]:
    """A note per declared derived axis whose source varies in ``rows``."""
    out = []
    for axis, source in declared.items():
        if axis in rows.columns and source in rows.columns and rows[source].nunique() > 1:
            out.append(
                f"the searched {axis} values were derived from {source} (derived_axes in the "
                f"grid): a trend of the best {axis} with {source} is partly built into the "
                "grid, not measured; check the edges and the fitted optimum"
            )
    return out
