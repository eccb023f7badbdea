"""From result rows to the values statistics use: diverged runs are worst, faults are dropped.

A ``diverged`` run is a result (the configuration does not train), so it scores the worst
possible value (+inf when lower is better) and is never treated as missing. Runs that failed for
reasons outside the configuration (``failed``, ``oom``, ``timeout``, ``cancelled``) and completed
runs without the metric are dropped, and counted so that every command can report them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from harness.analysis.goal import worst
from harness.core.errors import UserError
from harness.core.result import RESULT_STATUSES, Status

#: The column holding the value analysed (the metric, or the worst value for diverged runs).
VALUE = "value"


@dataclass(frozen=True, slots=True)
class Prepared:
    """Rows ready for statistics and what was set aside."""

    rows: pd.DataFrame
    """Completed and diverged rows, with the ``value`` column."""
    diverged: int
    """Diverged runs (kept, scored worst)."""
    dropped: dict[str, int] = field(default_factory=dict)
    """Reason (a fault status, or ``no <metric>``) -> rows dropped."""

    def notes(self) -> list[str]:
        """One line per thing a reader should know about the rows."""
        out = []
        if self.diverged:
            out.append(f"{self.diverged} diverged run(s) counted as worst")
        for why, n in sorted(self.dropped.items()):
            out.append(f"{n} run(s) left out ({why})")
        return out


def prepare(df: pd.DataFrame, metric: str, goal: str) -> Prepared:
    """Attach ``value`` = ``metric`` (worst for diverged runs) and drop faulted rows.

    Raises:
        UserError: ``metric`` is not a numeric column of ``df``.
    """
    if metric not in df.columns:
        raise UserError(f"--metric: unknown column {metric!r}")
    if not df.empty and not pd.api.types.is_numeric_dtype(df[metric]):
        raise UserError(f"--metric: column {metric!r} is not numeric")
    status = df["status"].astype(str)
    dropped = {s: int(n) for s, n in status[~status.isin(RESULT_STATUSES)].value_counts().items()}
    rows = df[status.isin(RESULT_STATUSES)].copy()
    is_div = rows["status"] == Status.DIVERGED
    values = rows[metric].astype(float).where(~is_div, worst(goal))
    missing = values.isna()
    if missing.any():
        dropped[f"no {metric}"] = int(missing.sum())
    rows[VALUE] = values
    rows = rows[~missing].copy()
    return Prepared(rows=rows, diverged=int(is_div.sum()), dropped=dropped)


def require_rows(rows: pd.DataFrame, what: str) -> None:
    """Refuse an empty selection.

    Raises:
        UserError: ``rows`` is empty.
    """
    if rows.empty:
        raise UserError(f"no completed or diverged runs {what}")


def std_or_nan(values: np.ndarray) -> float:
    """Corrected standard deviation (ddof 1); NaN for one value or a non-finite one."""
    v = np.asarray(values, dtype=float)
    return float(np.std(v, ddof=1)) if v.size > 1 and np.isfinite(v).all() else float("nan")
