"""Result rows and loss curves on disk: one Parquet file per run, written atomically.

A row holds the run's complete config (every :class:`~harness.config.RunConfig` field), its
outcome (:class:`~harness.outcome.RunResult`) and provenance. Writers never share a file: each run
writes its own row, so thousands of jobs can finish at once on a shared filesystem. A write goes
to a temporary name in the same folder and is renamed into place, so a reader (or a killed
writer) never sees half a row.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from harness import paths
from harness.config import RunConfig
from harness.fsutil import atomic_write
from harness.outcome import CURVE_COLUMNS, RunResult

_ARROW_OF = {"int": pa.int64(), "float": pa.float64(), "str": pa.string(), "bool": pa.bool_()}

#: Outcome columns written for every run, with their types (NULL where they do not apply).
OUTCOME_COLUMNS: dict[str, pa.DataType] = {
    "status": pa.string(),
    "params": pa.int64(),
    "val_loss": pa.float64(),
    "val_ppl": pa.float64(),
    "train_loss": pa.float64(),
    "steps_done": pa.int64(),
    "tokens_seen": pa.int64(),
    "wall_s": pa.float64(),
    "tokens_per_s": pa.float64(),
    "error": pa.string(),
}

#: Named metrics every row carries (NULL when not measured); ``RunResult.metrics`` fills them.
METRIC_COLUMNS = (
    "iso", "mu_norm", "mean_norm", "mu_norm_ratio", "rho", "kappa",
    "head_iso", "head_mu_norm", "head_mean_norm", "head_mu_norm_ratio", "head_rho", "head_kappa",
    "v_unigram_r2", "v_unigram_slope",
    "mfu", "peak_mem_gb", "compile_s", "data_wait_s", "optimizer_step_frac",
)  # fmt: skip

#: Provenance columns: where and when the row was made.
PROVENANCE_COLUMNS: dict[str, pa.DataType] = {
    "device": pa.string(),
    "hostname": pa.string(),
    "visible_devices": pa.string(),  # CUDA_VISIBLE_DEVICES of the run's process
    "git_commit": pa.string(),
    "torch_version": pa.string(),
    "job_id": pa.string(),
    "source": pa.string(),
    "created_at": pa.timestamp("us", tz="UTC"),
}


def _arrow_type(annotation: str) -> pa.DataType:
    base = annotation.replace(" | None", "").strip()
    return _ARROW_OF[base]


def config_schema() -> pa.Schema:
    """Arrow schema of the config columns: ``run_id`` then every RunConfig field."""
    hints = typing.get_type_hints(RunConfig)
    cols = [pa.field("run_id", pa.string())]
    for f in dataclasses.fields(RunConfig):
        cols.append(pa.field(f.name, _arrow_type(_name(hints[f.name]))))
    return pa.schema(cols)


def _name(tp: Any) -> str:
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    return (args[0] if args else tp).__name__


def row_schema(extra_metrics: Iterable[str] = ()) -> pa.Schema:
    """Arrow schema of a result row (config + outcome + metrics + provenance)."""
    fields = list(config_schema())
    fields += [pa.field(k, t) for k, t in OUTCOME_COLUMNS.items()]
    names = list(METRIC_COLUMNS) + sorted(set(extra_metrics) - set(METRIC_COLUMNS))
    fields += [pa.field(k, pa.float64()) for k in names]
    fields += [pa.field(k, t) for k, t in PROVENANCE_COLUMNS.items()]
    return pa.schema(fields)


CURVE_SCHEMA = pa.schema(
    [pa.field("grid", pa.string()), pa.field("run_id", pa.string())]
    + [pa.field(c, pa.int64() if c in ("step", "tokens") else pa.float64()) for c in CURVE_COLUMNS]
)


def make_row(run: RunConfig, result: RunResult, provenance: Mapping[str, Any]) -> dict[str, Any]:
    """The flat result row of a run (a dict keyed by column name)."""
    row: dict[str, Any] = {"run_id": run.run_id, **run.to_dict()}
    for k in OUTCOME_COLUMNS:
        row[k] = getattr(result, k)
    for k in METRIC_COLUMNS:
        row[k] = None
    row.update({k: (None if v is None else float(v)) for k, v in result.metrics.items()})
    for k in PROVENANCE_COLUMNS:
        row[k] = provenance.get(k)
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
    table = pa.Table.from_pylist([row], schema=row_schema(result.metrics))
    path = paths.run_path(root, run.grid, run.run_id)
    atomic_write_table(table, path)
    return path


def curve_table(run: RunConfig, points: list[Mapping[str, Any]]) -> pa.Table:
    """Loss-curve points as an Arrow table with ``grid`` and ``run_id`` columns."""
    cols: dict[str, list[Any]] = {c: [p.get(c) for p in points] for c in CURVE_COLUMNS}
    cols = {"grid": [run.grid] * len(points), "run_id": [run.run_id] * len(points), **cols}
    return pa.table(cols, schema=CURVE_SCHEMA)


def read_row(path: Path) -> dict[str, Any]:
    """Read one result row back as a dict."""
    return pq.read_table(path).to_pylist()[0]
