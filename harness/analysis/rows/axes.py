"""Roles of the config columns in an analysis: condition, hyperparameter, or neither.

A *cell* is a combination of condition values (``--by`` and the compared arm). Within a cell,
an optimizer is *tuned*: its result is the best configuration over the hyperparameters that vary
there (``--over``). Any other config column that varies inside a cell would silently mix
different experiments, so :func:`check_cells` refuses it.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from harness.core.catalogue import (
    FIELD_NAMES,
    NOT_COMPARED,
    OWN_HYPERPARAMETERS,
    TUNED,
    WORKLOAD_PARAMETERS,
)
from harness.core.errors import UserError

HYPERPARAMETERS: tuple[str, ...] = TUNED
"""Run fields that are tuned over when they vary (those declared ``tuned``)."""


def own_hyperparameters(df: pd.DataFrame) -> list[str]:
    """The optimizers' own hyperparameters among ``df``'s columns (each row names its own in
    ``own_hyperparameters``): tuned over like ``HYPERPARAMETERS``."""
    if OWN_HYPERPARAMETERS not in df.columns:
        return []
    names = {n for v in df[OWN_HYPERPARAMETERS].dropna().unique() for n in str(v).split(",") if n}
    return sorted(n for n in names if n in df.columns)


def hyperparameters(df: pd.DataFrame) -> list[str]:
    """Every column of ``df`` that is tuned over when it varies."""
    return [*(h for h in HYPERPARAMETERS if h in df.columns), *own_hyperparameters(df)]


def workload_parameters(df: pd.DataFrame) -> list[str]:
    """The workloads' parameters among ``df``'s columns (each row names its workload's in
    ``workload_parameters``): conditions, never tuned over."""
    if WORKLOAD_PARAMETERS not in df.columns:
        return []
    names = {n for v in df[WORKLOAD_PARAMETERS].dropna().unique() for n in str(v).split(",") if n}
    return sorted(n for n in names if n in df.columns)


def experiment_columns(df: pd.DataFrame) -> list[str]:
    """Config columns of ``df`` whose values define an experiment (all but ``NOT_COMPARED``),
    the optimizers' own hyperparameters and the workloads' parameters included."""
    fields = [c for c in FIELD_NAMES if c in df.columns and c not in NOT_COMPARED]
    return fields + own_hyperparameters(df) + workload_parameters(df)


def varying(df: pd.DataFrame, columns: Sequence[str]) -> list[str]:
    """The columns among ``columns`` that take more than one value (NULL counts as a value)."""
    return [c for c in columns if c in df.columns and _two_values(df[c])]


def _two_values(column: pd.Series) -> bool:
    """``column.nunique(dropna=False) > 1``, without hashing every value where none is NULL
    (each value compared with the first: an analysis asks this of every config column of
    100,000 rows several times)."""
    missing = column.isna().to_numpy()
    if missing.all():  # None and NaN are two values to nunique
        return bool(column.nunique(dropna=False) > 1)
    if missing.any():  # NULL and a value
        return True
    if isinstance(column.dtype, pd.StringDtype):  # compared in Arrow: no Python str made
        return bool((column != column.iloc[0]).any())
    values = column.to_numpy()
    return bool((values != values[0]).any())


def varying_within(df: pd.DataFrame, keys: Sequence[str], columns: Sequence[str]) -> list[str]:
    """The columns among ``columns`` (minus ``keys``) that vary inside some cell of ``keys``."""
    # a column with one value in all of df has one in each cell: only the others are grouped
    cols = varying(df, [c for c in columns if c not in keys])
    if not cols or df.empty:
        return []
    if not keys:
        return varying(df, cols)
    counts = df.groupby(list(keys), dropna=False)[cols].nunique(dropna=False)
    return [c for c in cols if (counts[c] > 1).any()]


def check_cells(df: pd.DataFrame, keys: Sequence[str], over: Sequence[str]) -> None:
    """Refuse cells that mix experiments: a config column outside ``keys`` and ``over`` varies
    within a configuration, or a column that is no hyperparameter varies within a cell.

    Raises:
        UserError: naming the varying columns and how to fix it.
    """
    columns = experiment_columns(df)
    mixed = varying_within(df, list(keys) + list(over), columns)
    # a column that is not tuned must be one value per cell, not merely per configuration (an
    # optimizer whose lrs no other optimizer tried is not tuned over by lr)
    tuned = set(hyperparameters(df))
    mixed += [
        c
        for c in varying_within(df, keys, [c for c in columns if c not in tuned])
        if c not in over and c not in mixed
    ]
    if mixed:
        named = [k for k in keys if k != "arm"]
        cells = f"the cells of {', '.join(named)}" if named else "one cell"
        cells += " and arm" if "arm" in keys else ""
        raise UserError(
            f"column(s) {', '.join(mixed)} vary within {cells}; add them to "
            "--by (conditions) or --over (tuned), select arms more narrowly (e.g. label=...), "
            "or restrict the rows with --where"
        )


def check_columns(df: pd.DataFrame, columns: Sequence[str], flag: str) -> None:
    """Every name in ``columns`` is a column of ``df``.

    Raises:
        UserError: naming the unknown column, the flag and the valid config columns.
    """
    for c in columns:
        if c not in df.columns:
            valid = ", ".join([*experiment_columns(df), "seed"])
            raise UserError(f"{flag}: unknown column {c!r}; valid columns: {valid}")
