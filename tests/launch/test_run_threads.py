"""A run's threads belong to its execution, not to its submission (issue 40, item 3): they come
from the launcher profile and the machine, are recorded in its row, and the same run trained
alone and among others computes bit-identical numbers."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from harness.api import connect
from harness.core import paths
from harness.core.provenance import BLAS_THREADS, TORCH_THREADS
from harness.core.result import RunResult, Status
from harness.launch.local import slots
from harness.launch.local.launcher import LocalLauncher
from harness.launch.local.settings import LocalSettings
from harness.launch.profile import load_profile
from harness.store.manifest import read_manifest, write_manifest
from harness.store.rows import read_row, write_result
from harness.store.schema import row_schema
from tests.runs import launch_and_wait, tiny_run

TIMED = {"wall_s", "tokens_per_s", "mfu", "peak_mem_gb", "compile_s", "data_wait_s"}
TIMED |= {"optimizer_step_frac", "elapsed_s"}
"""Metrics and curve columns that measure time or memory, not what the run computed."""
NOT_COMPUTED = {"created_at", "attempt", "hostname", "git_commit", "job_id", "visible_devices"}
"""Columns saying where and when: equal runs differ in them."""


@pytest.mark.parametrize(
    ("settings", "runs", "gpus", "want"),
    [
        (LocalSettings(), 1, 0, (1, 1)),  # one slot per core: one thread each, alone or not
        (LocalSettings(), 4, 0, (4, 1)),
        (LocalSettings(max_parallel=2), 1, 0, (1, 2)),  # two slots on four cores
        (LocalSettings(max_parallel=2), 9, 0, (2, 2)),
        (LocalSettings(threads_per_run=3), 1, 0, (1, 3)),  # the profile's own count
        (LocalSettings(runs_per_device=2), 1, 1, (1, 2)),  # two slots on one GPU
    ],
)
def test_threads_come_from_the_profile_and_the_machine_not_the_submission(
    settings: LocalSettings, runs: int, gpus: int, want: tuple[int, int]
) -> None:
    assert slots.split_cores(settings, runs, gpus, cores=4) == want


def test_a_negative_thread_count_is_refused() -> None:
    with pytest.raises(ValueError, match="threads_per_run"):
        LocalSettings(threads_per_run=-1)


def test_rows_declare_the_thread_columns_as_integers() -> None:
    schema = row_schema()
    assert str(schema.field(TORCH_THREADS).type) == "int64"
    assert str(schema.field(BLAS_THREADS).type) == "int64"


def _rows_and_curve(root: Path, grid: str, run_id: str) -> tuple[dict[str, Any], list[Any]]:
    (row_file,) = paths.runs_dir(root, grid).glob(f"{run_id}.*.parquet")
    (curve_file,) = paths.curves_dir(root, grid).glob(f"{run_id}.*.parquet")
    row = {k: v for k, v in read_row(row_file).items() if k not in TIMED | NOT_COMPUTED}
    points = pq.read_table(curve_file).to_pylist()
    curve = [{k: v for k, v in p.items() if k not in TIMED} for p in points]
    return row, curve


@pytest.mark.slow
def test_a_run_alone_and_among_four_gives_bit_identical_rows(
    tmp_path: Path, prepared_data: Path
) -> None:
    # the GPT: its matrix products split over threads; a sum of another order differs in bits
    runs = [
        tiny_run(prepared_data, grid="t", seed=s, tokens=8 * 32 * 4, eval_tokens=1024)
        for s in range(4)
    ]
    launcher = LocalLauncher(load_profile("local"), gpus=[])
    alone, among = tmp_path / "alone", tmp_path / "among"
    for root, batch in ((alone, runs[:1]), (among, runs)):
        write_manifest(root, "t", batch)
        report = launch_and_wait(launcher, batch, root, prepared_data)
        assert set(report.statuses.values()) == {"completed"}
    row_alone, curve_alone = _rows_and_curve(alone, "t", runs[0].run_id)
    row_among, curve_among = _rows_and_curve(among, "t", runs[0].run_id)
    assert row_alone[TORCH_THREADS] == slots.split_cores(LocalSettings(), 1)[1]
    assert row_alone[BLAS_THREADS] == 1  # the metrics' numpy work: one thread in a run process
    assert row_alone == row_among  # metrics, thread columns, config: every bit
    assert curve_alone == curve_among and len(curve_alone) >= 2


def test_rows_of_earlier_versions_read_their_thread_columns_as_null(tmp_path: Path) -> None:
    root = tmp_path / "results"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "legacy" / "results", root)
    first = next(iter(read_manifest(root, "legacy").values()))
    threads = {TORCH_THREADS: 3, BLAS_THREADS: 1}
    write_result(root, first, RunResult(status=Status.COMPLETED), threads)  # a newer attempt
    sql = f"SELECT run_id, {TORCH_THREADS}, {BLAS_THREADS} FROM runs ORDER BY run_id"
    got = {r[0]: r[1:] for r in connect("legacy", results=root).sql(sql).fetchall()}
    assert got.pop(first.run_id) == (3, 1)
    assert len(got) == 5 and set(got.values()) == {(None, None)}
