"""Result rows and loss curves on disk: one Parquet file per run, written atomically.

A row holds the run's complete config (every run field, :mod:`harness.core.catalogue`), its outcome
(:class:`~harness.core.result.RunResult`: status, counts and every catalogued metric) and
provenance (:mod:`harness.store.schema` has the columns). Writers never share a file: each run
writes its own row, so thousands of jobs can finish at once on a shared filesystem. A write goes
to a temporary name in the same folder and is renamed into place, so a reader (or a killed
writer) never sees half a row.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from harness.core import paths
from harness.core.catalogue import OWN_HYPERPARAMETERS, flat
from harness.core.config import RunConfig
from harness.core.files import atomic_write
from harness.core.result import CURVE_COLUMNS, RunResult
from harness.metrics.catalogue import METRICS
from harness.store.schema import (
    OUTCOME_COLUMNS,
    PROVENANCE_COLUMNS,
    curve_schema,
    row_schema,
)


def make_row(run: RunConfig, result: RunResult, provenance: Mapping[str, Any]) -> dict[str, Any]:
    """The flat result row of a run (a dict keyed by column name).

    Raises:
        ValueError: the result carries a metric :mod:`harness.metrics.catalogue` does not declare.
    """
    unknown = sorted(set(result.metrics) - set(METRICS))
    if unknown:
        raise ValueError(f"undeclared metrics {unknown}: declare them in harness.metrics.catalogue")
    row: dict[str, Any] = {"run_id": run.run_id, **flat(run)}
    row[OWN_HYPERPARAMETERS] = ",".join(n for n, _ in run.optim.hyperparameters.items) or None
    for k in OUTCOME_COLUMNS:
        row[k] = getattr(result, k)
    for k in METRICS:
        v = result.metrics.get(k)
        row[k] = None if v is None else float(v)
    for k in PROVENANCE_COLUMNS:
        row[k] = provenance.get(k)
    row["device"] = result.device or row["device"]  # where the run computed
    if row["created_at"] is None:
        row["created_at"] = dt.datetime.now(dt.UTC)
    return row


def atomic_write_table(table: pa.Table, path: Path) -> None:
    """Write ``table`` to ``path`` through a temporary file in the same folder and a rename."""
    atomic_write(path, lambda fh: pq.write_table(table, fh))


def write_result(
    root: Path, run: RunConfig, result: RunResult, provenance: Mapping[str, Any]
) -> Path:
    """Write a run's loss curve, then its row (the row last: its presence means 'done').

    Returns:
        The path of the row file, ``<root>/<grid>/runs/<run_id>.parquet``.
    """
    curve = curve_table(run, result.curve)
    atomic_write_table(curve, paths.curve_path(root, run.grid, run.run_id))
    row = make_row(run, result, provenance)
    table = pa.Table.from_pylist([row], schema=row_schema([run]))
    path = paths.run_path(root, run.grid, run.run_id)
    atomic_write_table(table, path)
    return path


def curve_table(run: RunConfig, points: list[Mapping[str, Any]]) -> pa.Table:
    """Loss-curve points as an Arrow table with ``grid`` and ``run_id`` columns, then a column
    per tracked metric (NULL at the points without an evaluation)."""
    names = (*CURVE_COLUMNS, *run.execution.tracked)
    cols: dict[str, list[Any]] = {c: [p.get(c) for p in points] for c in names}
    cols = {"grid": [run.grid] * len(points), "run_id": [run.run_id] * len(points), **cols}
    return pa.table(cols, schema=curve_schema(run))


def read_row(path: Path) -> dict[str, Any]:
    """Read one result row back as a dict."""
    return pq.read_table(path).to_pylist()[0]
