"""Compaction keeps every row and column, is atomic, and queries see old and new rows alike."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.core import paths
from harness.core.config import Hyperparameters
from harness.core.result import RunResult
from harness.store import layout
from harness.store.compact import compact, snapshot, write_generation
from harness.store.db import connect, newest_values, result_statuses
from harness.store.layout import remove_due, write_covered
from harness.store.rows import newest_curve_file, newest_row_file, write_result
from tests.runs import tiny_run

GRID = "t"


@pytest.fixture(autouse=True)
def no_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    """Covered files go at once (no reader lists them in these tests); the grace readers get is
    tested in test_store_versions.py."""
    monkeypatch.setattr(layout, "GRACE_S", 0.0)


def _curve(n: int, start: float) -> list[dict[str, Any]]:
    return [
        {
            "step": 2 * i + 2,
            "tokens": 512 * (i + 1),
            "train_loss": start - 0.1 * i,
            "lr": 1e-3,
            "val_loss": None if i < n - 1 else start - 0.5,
            "elapsed_s": 0.5 * i,
        }
        for i in range(n)
    ]


def _write(
    root: Path,
    lr: float,
    *,
    status: str = "completed",
    points: int = 3,
    extra: dict[str, float] | None = None,
    when: dt.datetime | None = None,
    host: str = "h",
    grid: str = GRID,
) -> str:
    """Write one run's row and curve; returns its run_id."""
    run = tiny_run(root / "data", grid=grid, lr=lr)
    if extra:  # an optimizer's own hyperparameter: a column some rows have and others lack
        own = Hyperparameters.of(extra)
        run = dataclasses.replace(run, optim=dataclasses.replace(run.optim, hyperparameters=own))
    ok = status == "completed"
    metrics = {
        "val_loss": 3.0 + lr if ok else None,
        "val_ppl": 20.0 if ok else None,
        "train_loss": 3.1,
        "wall_s": 1.5,
        "tokens_per_s": 1000.0 + lr,
        "iso": 0.5,
    }
    result = RunResult(
        status=status,
        params=1234,
        steps_done=6,
        tokens_seen=1536,
        error=None if ok else "non-finite loss",
        device="cpu",
        metrics=metrics,
        curve=_curve(points, 5.0 + lr) if ok else [],
    )
    created = when or dt.datetime.now(dt.UTC)
    write_result(root, run, result, {"hostname": host, "created_at": created})
    return run.run_id


def _populate(root: Path, n: int = 6) -> list[str]:
    ids = [
        _write(root, 1e-3 * (i + 1), extra={"extra_hp": float(i)} if i % 2 else None)
        for i in range(n)
    ]
    ids.append(_write(root, 0.5, status="diverged"))  # no curve points, NULL losses
    return ids


def _files(folder: Path) -> pa.Table:
    tables = [pq.read_table(p) for p in sorted(folder.glob("*.parquet"))]
    return pa.concat_tables(tables, promote_options="default")


def _records(table: pa.Table, keys: tuple[str, ...]) -> list[dict[str, Any]]:
    rows = table.to_pylist()
    return sorted(rows, key=lambda r: tuple(str(r[k]) for k in keys))


def _view(root: Path, sql: str, keys: tuple[str, ...]) -> list[dict[str, Any]]:
    return _records(connect(root).sql(sql).to_arrow_table(), keys)


def _views(root: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Everything the runs and curves views show (rows as dicts: column order is irrelevant)."""
    runs = _view(root, "SELECT * FROM runs", ("run_id",))
    curves = _view(root, "SELECT * FROM curves", ("run_id", "step"))
    return runs, curves


def test_compaction_keeps_every_row_and_column(tmp_path):
    ids = _populate(tmp_path)
    rows = _files(paths.runs_dir(tmp_path, GRID))
    curves = _files(paths.curves_dir(tmp_path, GRID))
    before = _views(tmp_path)

    report = compact(tmp_path, GRID)

    assert (report.generation, report.rows, report.curve_points) == (1, len(ids), 6 * 3)
    assert report.consolidated_files == report.removed_files == 2 * len(ids)
    assert not any(paths.runs_dir(tmp_path, GRID).glob("*.parquet"))
    assert not any(paths.curves_dir(tmp_path, GRID).glob("*.parquet"))
    folder = paths.compact_dir(tmp_path, GRID)
    packed_rows = pq.read_table(folder / "runs-000001.parquet")
    packed_curves = pq.read_table(folder / "curves-000001.parquet")
    for original, packed in ((rows, packed_rows), (curves, packed_curves)):
        assert {(f.name, f.type) for f in packed.schema} == {
            (f.name, f.type) for f in original.schema
        }
        assert all(f.nullable for f in packed.schema)
    assert "extra_hp" in packed_rows.column_names
    assert _records(packed_rows, ("run_id",)) == _records(rows, ("run_id",))
    assert _records(packed_curves, ("run_id", "step")) == _records(curves, ("run_id", "step"))
    assert _views(tmp_path) == before
    assert set(result_statuses(tmp_path, GRID)) == set(ids)  # submit still skips them


def test_queries_see_consolidated_and_new_rows_alike(tmp_path):
    ids = _populate(tmp_path)
    compact(tmp_path, GRID)
    new = _write(tmp_path, 0.25)
    # A compacted run retried: a newer row and a new (longer) curve in per-run files.
    later = dt.datetime.now(dt.UTC) + dt.timedelta(1)
    retried = _write(tmp_path, 1e-3, points=5, when=later, host="retry")

    con = connect(tmp_path)
    assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == len(ids) + 1
    sql = f"SELECT step FROM curves WHERE run_id = '{retried}' ORDER BY step"
    steps = con.execute(sql).fetchall()
    assert [s for (s,) in steps] == [2, 4, 6, 8, 10]  # the new curve only, not both
    assert con.execute(f"SELECT count(*) FROM curves WHERE run_id = '{new}'").fetchone()[0] == 3
    statuses = result_statuses(tmp_path, GRID)
    assert set(statuses) == {*ids, new}
    before = _views(tmp_path)

    report = compact(tmp_path, GRID)

    assert report.generation == 2 and report.rows == len(ids) + 2  # both rows of the retried run
    assert report.removed_files == 4 + 2 + 1  # two runs' per-run files, generation 1's two
    # files and its covered list
    assert sorted(p.name for p in paths.compact_dir(tmp_path, GRID).glob("*.parquet")) == [
        "curves-000002.parquet",
        "runs-000002.parquet",
    ]
    assert _views(tmp_path) == before
    assert result_statuses(tmp_path, GRID) == statuses
    newest = newest_values(tmp_path, GRID, ["hostname", "status"], run_id=retried)
    assert newest == {retried: ("retry", "completed")}  # not the older consolidated row's "h"


def test_interrupted_compaction_shows_nothing_twice(tmp_path):
    _populate(tmp_path)
    compact(tmp_path, GRID)
    _write(tmp_path, 0.25)
    _write(tmp_path, 1e-3, points=5, when=dt.datetime.now(dt.UTC) + dt.timedelta(1))
    before = _views(tmp_path)
    snap = snapshot(tmp_path, GRID)

    write_generation(snap)  # stopped here: generation 2 has no covered list, readers ignore it
    assert _views(tmp_path) == before

    report = compact(tmp_path, GRID)  # the next compaction does the job again, removes the rest

    assert report.generation == 3
    names = sorted(p.name for p in paths.compact_dir(tmp_path, GRID).glob("*.parquet"))
    assert names == ["curves-000003.parquet", "runs-000003.parquet"]
    assert _views(tmp_path) == before
    total = pq.read_table(paths.compact_dir(tmp_path, GRID) / "runs-000003.parquet").num_rows
    assert total == len(before[0]) + 1  # the retried run's old row kept


def test_compaction_stopped_before_removing_is_finished_by_the_next(tmp_path):
    _populate(tmp_path)
    compact(tmp_path, GRID)
    _write(tmp_path, 0.25)
    before = _views(tmp_path)
    snap = snapshot(tmp_path, GRID)
    write_generation(snap)
    write_covered(tmp_path, GRID, snap.generation, list(snap.covered))
    assert _views(tmp_path) == before  # stopped before removing: generations 1, 2 and the files

    report = compact(tmp_path, GRID)

    assert (report.generation, report.removed_files) == (None, 2 + 2 + 1)
    names = sorted(p.name for p in paths.compact_dir(tmp_path, GRID).glob("*.parquet"))
    assert names == ["curves-000002.parquet", "runs-000002.parquet"]
    assert not list(paths.runs_dir(tmp_path, GRID).glob("*.parquet"))
    assert _views(tmp_path) == before


def test_a_row_rewritten_during_compaction_is_kept(tmp_path):
    ids = _populate(tmp_path, n=2)
    snap = snapshot(tmp_path, GRID)
    write_generation(snap)
    later = dt.datetime.now(dt.UTC) + dt.timedelta(1)
    again = _write(tmp_path, 1e-3, points=4, when=later)  # a retry lands mid-compaction
    assert again == ids[0]

    write_covered(tmp_path, GRID, snap.generation, list(snap.covered))
    remove_due(tmp_path, GRID)

    assert newest_row_file(tmp_path, GRID, again) is not None
    assert newest_curve_file(tmp_path, GRID, again) is not None
    con = connect(tmp_path)
    assert con.execute(f"SELECT count(*) FROM curves WHERE run_id = '{again}'").fetchone()[0] == 4
    sql = f"SELECT epoch_us(created_at) FROM runs WHERE run_id = '{again}'"
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    assert con.execute(sql).fetchone()[0] == (later - epoch) // dt.timedelta(microseconds=1)


def test_views_span_grids_in_different_states(tmp_path):
    for lr in (1e-3, 2e-3):
        for grid in ("a", "b", "c"):
            _write(tmp_path, lr, grid=grid)
    compact(tmp_path, "a")
    compact(tmp_path, "c")
    _write(tmp_path, 3e-3, grid="a")  # a: one generation + a per-run file; b: per-run; c: packed
    sql = "SELECT grid, count(*), count(DISTINCT run_id) FROM curves GROUP BY grid ORDER BY grid"
    assert connect(tmp_path).execute(sql).fetchall() == [("a", 9, 3), ("b", 6, 2), ("c", 6, 2)]
    sql = "SELECT grid, count(*) FROM runs GROUP BY grid ORDER BY grid"
    assert connect(tmp_path).execute(sql).fetchall() == [("a", 3), ("b", 2), ("c", 2)]


def test_compact_command(tmp_path):
    _populate(tmp_path, n=2)
    runner = CliRunner()
    first = runner.invoke(main, ["compact", GRID, "--results", str(tmp_path)])
    assert first.exit_code == 0, first.output
    assert "generation 1: 3 result rows and 6 curve points from 6 per-run files" in first.output
    second = runner.invoke(main, ["compact", GRID, "--results", str(tmp_path)])
    assert second.exit_code == 0 and "nothing to compact" in second.output
    bad = runner.invoke(main, ["compact", "nope", "--results", str(tmp_path)])
    assert bad.exit_code == 2 and "grids there: t" in bad.output


def test_slurm_reconciliation_sees_compacted_rows(tmp_path):
    from harness.launch.slurm.reconcile import row_jobs, row_of

    run_id = _write(tmp_path, 1e-3)
    compact(tmp_path, GRID)
    assert not list(paths.runs_dir(tmp_path, GRID).glob("*.parquet"))  # only compacted now
    assert row_of(tmp_path, GRID, run_id) == (None, "completed")
    assert row_jobs(tmp_path, GRID) == {run_id: None}
    assert row_of(tmp_path, GRID, "0" * 16) is None
