"""The manifest: every planned run of a grid, one row per run_id, in ``manifest.parquet``.

``submit`` merges newly expanded runs into it (earlier plans are kept, so a grid can grow);
a job reads its own config from it by run_id, never by an index into a YAML that may have
changed since.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from harness.core import paths
from harness.core.catalogue import flat, from_flat
from harness.core.config import RunConfig
from harness.core.errors import UserError
from harness.core.files import locked
from harness.store.integrity import arrow_fault, check_manifest, parquet_fault
from harness.store.rows import atomic_write_table
from harness.store.schema import config_schema


def _table(runs: Iterable[RunConfig]) -> pa.Table:
    runs = list(runs)
    rows = [{"run_id": r.run_id, **flat(r)} for r in runs]
    return pa.Table.from_pylist(rows, schema=config_schema(runs))


def write_manifest(root: Path, grid: str, runs: Iterable[RunConfig]) -> int:
    """Merge ``runs`` into the grid's manifest (atomically, under the grid's manifest lock, so
    that two submits at once each add their runs). Returns how many were new. Only the new
    runs are made into rows: a re-submit that adds none reads the manifest's run_ids, nothing
    more."""
    path = paths.manifest_path(root, grid)
    runs = list(runs)
    with locked(path.with_name(".manifest.lock")):
        return _merge(root, grid, runs)


def _merge(root: Path, grid: str, runs: list[RunConfig]) -> int:
    """Read-merge-write of ``grid``'s manifest; the caller holds its lock. A corrupt manifest is
    moved aside and planned anew from ``runs``."""
    path = paths.manifest_path(root, grid)
    check_manifest(root, grid)
    if path.exists():
        with pq.ParquetFile(path) as fh:  # not pyarrow.dataset, which imports pandas
            planned = fh.read(columns=["run_id"]).column("run_id").to_pylist()
        have = set(planned)
        fresh_runs = [r for r in runs if r.run_id not in have]
        if not fresh_runs:
            return 0
        old = pq.read_table(path)
        fresh = _table(fresh_runs)
        # A manifest written by an earlier version (fewer fields) or with other optimizers' own
        # hyperparameters: columns are unified by name, missing values are NULL.
        merged = pa.concat_tables([old, fresh], promote_options="default")
        # in today's column order (fields added since the old manifest sit inside sections)
        names = fresh.schema.names
        order = [*names, *(n for n in merged.schema.names if n not in names)]
        merged = merged.select(order)
    else:
        fresh = merged = _table(runs)
    atomic_write_table(merged, path)
    rows: int = fresh.num_rows
    return rows


def read_manifest(
    root: Path, grid: str, only: Collection[str] | None = None
) -> dict[str, RunConfig]:
    """run_id -> RunConfig of every planned run of ``grid`` (of those among ``only`` when
    given: parsing a config costs, so a caller that needs a few reads a few)."""
    path = paths.manifest_path(root, grid)
    if not path.exists():
        raise UserError(f"no manifest for grid {grid!r} at {path}; submit the grid first")
    _refuse_corrupt(root, grid)
    table = pq.read_table(path)
    if only is not None:
        table = table.filter(pc.is_in(table["run_id"], pa.array(list(only), pa.string())))
    return {r["run_id"]: from_flat(r) for r in table.to_pylist()}


def load_run(root: Path, grid: str, run_id: str) -> RunConfig:
    """One run's config, read from the manifest by run_id.

    Raises:
        KeyError: the run is not in the manifest.
        UserError: the manifest is missing or corrupt (left in place: runs may be reading it).
    """
    path = paths.manifest_path(root, grid)
    if not path.exists():
        raise UserError(f"no manifest for grid {grid!r} at {path}; submit the grid first")
    _refuse_corrupt(root, grid)
    table = pq.read_table(path, filters=[("run_id", "=", run_id)])
    if table.num_rows != 1:
        raise KeyError(f"run {run_id} not in manifest {path} ({table.num_rows} rows)")
    run = from_flat(table.to_pylist()[0])
    assert run_id == run.run_id, f"manifest row {run_id} hashes to {run.run_id}"
    return run


def _refuse_corrupt(root: Path, grid: str) -> None:
    """A corrupt manifest (its ends, or a page that pyarrow cannot read) is a UserError."""
    path = paths.manifest_path(root, grid)
    fault = parquet_fault(path) or arrow_fault(path)
    if fault is not None:
        raise UserError(f"{path}: {fault}; submit the grid again to move it aside and replan")
