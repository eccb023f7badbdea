"""From result rows to the values statistics use: diverged runs are worst, faults are dropped.

A ``diverged`` run is a result (the configuration does not train), so it scores the worst
possible value (+inf when lower is better) and is never treated as missing. Runs that failed for
reasons outside the configuration (``failed``, ``oom``, ``timeout``, ``cancelled``) and completed
runs without the metric are dropped, and counted so that every command can report them.

The metric reported (``value``) and the metric that selects each cell's best configuration
(``select_value``, ``--select-by``) may differ: the paper picks the SGD-embedding lr factor by
loss and reports the embedding metrics at that choice (Sec. 6.2, Tables 4 and 7).

``iso`` changed meaning (see :mod:`harness.metrics.embedding`): a trained row without ``iso_sym``
was written before, and its ``iso`` holds the sign-symmetric value. Such rows count as
``iso_sym`` and have no ``iso`` (the paper's convention cannot be recovered from them).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from harness.analysis.rows.direction import DEFAULT_METRIC, worst
from harness.analysis.stats import SELECT, VALUE, std_or_nan  # noqa: F401 (re-exported)
from harness.core.errors import UserError
from harness.core.result import RESULT_STATUSES, Status
from harness.metrics.catalogue import Goal

#: Metrics whose meaning changed: name -> the name rows written before hold it under.
RENAMED = {"iso": "iso_sym", "head_iso": "head_iso_sym"}
#: What the default metric becomes where no run has it: a workload other than the GPT reports
#: a loss, not a perplexity.
FALLBACK_METRIC = "val_loss"


def resolve_metric(df: pd.DataFrame, metric: str) -> tuple[str, list[str]]:
    """The metric analysed and the note saying why: ``metric``, except that the default
    (``val_ppl``) becomes ``val_loss`` when no row of ``df`` has a perplexity but some have a
    loss (a workload grid, :mod:`harness.workloads`). Every GPT row with a result has both, so
    a GPT grid keeps the default."""
    if metric != DEFAULT_METRIC or _has_values(df, metric) or not _has_values(df, FALLBACK_METRIC):
        return metric, []
    return FALLBACK_METRIC, [
        f"metric {FALLBACK_METRIC}: no run has {metric} (a workload other than the GPT); "
        "name another with --metric"
    ]


def _has_values(df: pd.DataFrame, column: str) -> bool:
    return column in df.columns and bool(df[column].notna().any())


@dataclass(frozen=True, slots=True)
class Prepared:
    """Rows ready for statistics and what was set aside."""

    rows: pd.DataFrame
    """Completed and diverged rows, with the ``value`` column."""
    diverged: int
    """Diverged runs (kept, scored worst)."""
    dropped: dict[str, int] = field(default_factory=dict)
    """Reason (a fault status, or ``no <metric>``) -> rows dropped."""
    select: str | None = None
    """The metric that selects configurations (``select_value``), when not the analysed one."""
    select_goal: Goal | None = None
    """``min`` or ``max`` for ``select``."""
    readings: tuple[str, ...] = ()
    """Notes about the grid the rows came from (e.g. derived axes)."""
    expressions: tuple[str, ...] = ()
    """Fields the grid YAMLs compute by an expression: they follow their sources, never
    tuned over (:func:`harness.analysis.rows.conditions.followers`)."""
    pool: tuple[str, ...] = ()
    """Conditions pooled (``--pool``): tuned over instead of being cells."""

    def notes(self) -> list[str]:
        """One line per thing a reader should know about the rows."""
        out = list(self.readings)
        if self.diverged:
            out.append(f"{self.diverged} diverged run(s) counted as worst")
        for why, n in sorted(self.dropped.items()):
            out.append(f"{n} run(s) left out ({why})")
        return out


def prepare(
    df: pd.DataFrame,
    metric: str,
    goal: Goal,
    select: str | None = None,
    select_goal: Goal | None = None,
) -> Prepared:
    """Attach ``value`` = ``metric`` (worst for diverged runs) and drop faulted rows; with a
    ``select`` metric other than ``metric``, also ``select_value`` (worst under
    ``select_goal`` for diverged runs), rows without it dropped too.

    Raises:
        UserError: ``metric`` or ``select`` is not a numeric column of ``df``, or no run has
            ``select``.
    """
    select = None if select == metric else select
    df = _renamed_metrics(df)
    _check_numeric(df, metric, "--metric")
    status = df["status"].astype(str)
    dropped = {
        str(s): int(n) for s, n in status[~status.isin(RESULT_STATUSES)].value_counts().items()
    }
    # copy-on-write (pandas 3): a shallow copy, or a filtered one, is this function's own frame
    # to add columns to; a deep copy of 100,000 rows x 120 columns cost 0.2 s of CPU twice
    result = status.isin(RESULT_STATUSES)
    rows = df.copy(deep=False) if bool(result.all()) else df[result]
    is_div = rows["status"] == Status.DIVERGED
    rows[VALUE] = rows[metric].astype(float).where(~is_div, worst(goal))
    missing = {metric: rows[VALUE].isna()}
    if select is not None:
        _check_numeric(df, select, "--select-by")
        if not rows.empty and rows[select].isna().all() and not is_div.all():
            raise UserError(
                f"--select-by {select}: no run has it; name the metric that picks each cell's "
                "configuration with --select-by"
            )
        rows[SELECT] = rows[select].astype(float).where(~is_div, worst(select_goal or goal))
        missing[select] = rows[SELECT].isna() & ~missing[metric]
    for name, mask in missing.items():
        if mask.any():
            dropped[f"no {name!s}"] = int(mask.sum())
    keep = ~pd.concat(list(missing.values()), axis=1).any(axis=1)
    rows = rows if bool(keep.all()) else rows[keep]
    return Prepared(
        rows=rows,
        diverged=int(is_div.sum()),
        dropped=dropped,
        select=select,
        select_goal=(select_goal or goal) if select else None,
    )


def _check_numeric(df: pd.DataFrame, column: str, flag: str) -> None:
    if column not in df.columns:
        raise UserError(f"{flag}: unknown column {column!r}")
    if not df.empty and not pd.api.types.is_numeric_dtype(df[column]):
        raise UserError(f"{flag}: column {column!r} is not numeric")


def _renamed_metrics(df: pd.DataFrame) -> pd.DataFrame:
    """Rows written before a metric changed meaning read under the new names (module doc)."""
    if "source" not in df.columns:
        return df
    df = df.copy(deep=False)  # copy-on-write: the caller's frame is not changed
    trained = df["source"].isna()
    for name, old in RENAMED.items():
        if name not in df.columns:
            continue
        if old not in df.columns:
            df[old] = np.nan
        before = trained & df[old].isna() & df[name].notna()
        df.loc[before, old] = df.loc[before, name]
        df.loc[before, name] = np.nan
    return df


def require_rows(rows: pd.DataFrame, what: str) -> None:
    """Refuse an empty selection.

    Raises:
        UserError: ``rows`` is empty.
    """
    if rows.empty:
        raise UserError(f"no completed or diverged runs {what}")
