"""Grouping rows into cells by key columns, with NULL keys kept and no keys meaning one cell."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from pandas.core.groupby import DataFrameGroupBy


def groups(df: pd.DataFrame, keys: Sequence[str]) -> DataFrameGroupBy[Any, Literal[True]]:
    """``df`` grouped by ``keys`` (NULL is a group of its own); all rows when ``keys`` is empty."""
    if keys:
        return df.groupby(list(keys), dropna=False, sort=True)
    return df.groupby(np.zeros(len(df), dtype=int))


def iter_cells(
    df: pd.DataFrame, keys: Sequence[str]
) -> Iterator[tuple[dict[str, Any], pd.DataFrame]]:
    """(key column -> value, rows) for each cell of ``df`` by ``keys``."""
    for key, cell in groups(df, keys):
        values = key if isinstance(key, tuple) else (key,)
        yield (dict(zip(keys, values, strict=False)), cell)


def with_keys(frame: pd.DataFrame, key: dict[str, Any]) -> pd.DataFrame:
    """``frame`` with the cell's key columns prepended."""
    front = pd.DataFrame({k: [v] * len(frame) for k, v in key.items()}, index=frame.index)
    return pd.concat([front, frame], axis=1)
