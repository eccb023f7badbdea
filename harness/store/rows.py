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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from harness.core import paths
from harness.core.catalogue import OWN_HYPERPARAMETERS, WORKLOAD_PARAMETERS, flat
from harness.core.config import RunConfig
from harness.core.files import atomic_write
from harness.core.provenance import ATTEMPT, ATTEMPT_ABSENT
from harness.core.result import CURVE_COLUMNS, RunResult
from harness.metrics.catalogue import METRICS
from harness.store.schema import (
    OUTCOME_COLUMNS,
    PROVENANCE_COLUMNS,
    curve_schema,
    row_schema,
)
from harness.workloads.registry import get_workload


def make_row(run: RunConfig, result: RunResult, provenance: Mapping[str, Any]) -> dict[str, Any]:
    """The flat result row of a run (a dict keyed by column name).

    Raises:
        ValueError: the result carries a metric :mod:`harness.metrics.catalogue` does not declare.
    """
    unknown = sorted(set(result.metrics) - set(METRICS))
    if unknown:
        raise ValueError(f"undeclared metrics {unknown}: declare them in harness.metrics.catalogue")
    row: dict[str, Any] = {"run_id": run.run_id, **flat(run)}
    params = workload_parameters(run)
    own = (n for n, _ in run.optim.hyperparameters.items if n not in params)
    row[OWN_HYPERPARAMETERS] = ",".join(own) or None
    row[WORKLOAD_PARAMETERS] = ",".join(params) or None
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


def workload_parameters(run: RunConfig) -> tuple[str, ...]:
    """The columns of ``run`` that are its workload's parameters (none for the GPT's runs)."""
    if run.arch.workload is None:
        return ()
    return get_workload(run.arch.workload).names


def atomic_write_table(table: pa.Table, path: Path) -> None:
    """Write ``table`` to ``path`` through a temporary file in the same folder and a rename,
    with page checksums (:mod:`harness.store.integrity` verifies them)."""
    atomic_write(path, lambda fh: pq.write_table(table, fh, write_page_checksum=True))


def write_result(
    root: Path, run: RunConfig, result: RunResult, provenance: Mapping[str, Any]
) -> Path:
    """Write a run's loss curve, then its row (the row last: its presence means 'done').

    The row's attempt is ``provenance[ATTEMPT]``, else :func:`next_attempt`.

    Returns:
        The path of the row file, ``<root>/<grid>/runs/<run_id>.parquet``.
    """
    if provenance.get(ATTEMPT) is None:
        provenance = {**provenance, ATTEMPT: next_attempt(root, run.grid, run.run_id)}
    curve = curve_table(run, result.curve)
    atomic_write_table(curve, paths.curve_path(root, run.grid, run.run_id))
    row = make_row(run, result, provenance)
    table = pa.Table.from_pylist([row], schema=row_schema([run]))
    path = paths.run_path(root, run.grid, run.run_id)
    atomic_write_table(table, path)
    return path


def write_imported(root: Path, grid: str, table: pa.Table, key: str) -> Path:
    """Write the rows of one import (``harness import``: published results, no curves) into
    ``grid``'s runs, replacing those of an earlier import with the same ``key``.

    Args:
        root: the results root.
        grid: the grid the rows belong to.
        table: the rows (:func:`~harness.store.schema.row_schema` columns).
        key: what tells imports apart (a digest of the file and its options).

    Returns:
        The file holding the rows (:func:`harness.core.paths.import_path`).
    """
    path = paths.import_path(root, grid, key)
    atomic_write_table(table, path)
    return path


def curve_table(run: RunConfig, points: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Loss-curve points as an Arrow table with ``grid`` and ``run_id`` columns, then a column
    per tracked metric (NULL at the points without an evaluation)."""
    names = (*CURVE_COLUMNS, *run.execution.tracked)
    cols: dict[str, list[Any]] = {c: [p.get(c) for p in points] for c in names}
    cols = {"grid": [run.grid] * len(points), "run_id": [run.run_id] * len(points), **cols}
    return pa.table(cols, schema=curve_schema(run))


def read_row(path: Path) -> dict[str, Any]:
    """Read one result row back as a dict."""
    row: dict[str, Any] = pq.read_table(path).to_pylist()[0]
    return row


def next_attempt(root: Path, grid: str, run_id: str) -> int:
    """The attempt number of ``run_id``'s next row: one more than the highest among its rows on
    disk (its per-run row and the consolidated ones; a row without one counts as
    :data:`~harness.core.provenance.ATTEMPT_ABSENT`), 1 for its first.

    The caller holds the run's lock (the process training it), so no other row of the run is
    written meanwhile. A file a compaction removes while it is read is read again from the
    generation that replaced it; an unreadable (corrupt) file counts as holding no row.
    """
    while True:
        found = _highest_attempt(root, grid, run_id)
        if found is not None:
            return found + 1


def _highest_attempt(root: Path, grid: str, run_id: str) -> int | None:
    """The highest attempt among ``run_id``'s rows, or None when a file vanished meanwhile."""
    highest = ATTEMPT_ABSENT
    row = paths.run_path(root, grid, run_id)  # first: once compacted, a generation holds it
    gens = paths.generations(root, grid, "runs")
    for path in [row, *gens] if row.exists() else gens:
        try:
            names = pq.read_schema(path).names
            if ATTEMPT not in names:
                continue  # rows written before attempts were recorded
            table = pq.read_table(path, columns=[ATTEMPT], filters=[("run_id", "=", run_id)])
        except FileNotFoundError:
            return None
        except (OSError, pa.ArrowException):
            continue  # corrupt: moved aside by the next reader (harness.store.integrity)
        highest = max([highest, *(a for a in table.column(ATTEMPT).to_pylist() if a is not None)])
    return highest


def newest_rows(
    root: Path, grid: str, run_ids: Sequence[str], columns: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """``columns`` of the newest row (by attempt, then time) of each of ``run_ids`` that has one,
    read from those runs' own per-run files and, filtered by run_id, the consolidated generations:
    never from other runs' files, so what a task of a few runs reads does not grow with its
    grid. A column a file lacks is None; an unreadable file counts as holding no row; a file a
    compaction removes while it is read is read again from the generation that replaced it."""
    wanted = list(dict.fromkeys([ATTEMPT, "created_at", *columns]))
    while True:
        found = _rows_of(root, grid, run_ids, wanted)
        if found is not None:
            break
    newest: dict[str, dict[str, Any]] = {}
    for row in found:
        old = newest.get(row["run_id"])
        if old is None or _order(row) >= _order(old):
            newest[row["run_id"]] = row
    return {r: {c: row.get(c) for c in columns} for r, row in newest.items()}


def _order(row: Mapping[str, Any]) -> tuple[int, float]:
    """Where a row sorts among its run's rows (:data:`~harness.store.schema.NEWEST_KEY`)."""
    attempt = row.get(ATTEMPT)
    created = row.get("created_at")
    return (ATTEMPT_ABSENT if attempt is None else attempt,
            created.timestamp() if created is not None else 0.0)  # fmt: skip


def _rows_of(
    root: Path, grid: str, run_ids: Sequence[str], wanted: Sequence[str]
) -> list[dict[str, Any]] | None:
    """Every row of ``run_ids`` (``wanted`` columns and run_id), or None when a file vanished."""
    own = [p for r in run_ids if (p := paths.run_path(root, grid, r)).exists()]
    out: list[dict[str, Any]] = []
    for path in [*own, *paths.generations(root, grid, "runs")]:
        try:
            names = set(pq.read_schema(path).names)
            cols = ["run_id", *(c for c in wanted if c in names and c != "run_id")]
            table = pq.read_table(path, columns=cols, filters=[("run_id", "in", list(run_ids))])
        except FileNotFoundError:
            return None
        except (OSError, pa.ArrowException):
            continue  # corrupt: moved aside by the next reader (harness.store.integrity)
        out += table.to_pylist()
    return out
