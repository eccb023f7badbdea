"""What one SLURM array task does with its runs, in this process (no cluster needed): it never
trains a run that has a row from another job since ``submit`` saw it (issue 28 item 3), and its
start-up reads only its own runs' rows, never the grid's (item 6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.core.provenance import provenance
from harness.core.result import RunResult, Status
from harness.launch.slurm.task import RunTask
from harness.launch.worker.job import done_by_job
from harness.store.db import newest_values
from harness.store.manifest import write_manifest
from harness.store.rows import newest_row_file, row_mark, write_result
from tests.runs import spec_for, tiny_run

GRID = "task"


class _NoSignal:
    """A task's signal record that never asks to stop."""

    caught = None

    def stop_requested(self) -> bool:
        return False


def _finished_elsewhere(root: Path, run, job: str) -> None:
    result = RunResult(status=Status.COMPLETED, steps_done=run.data.steps, metrics={"val_loss": 1})
    write_result(root, run, result, provenance(job))


@pytest.mark.parametrize("per_device", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_a_task_leaves_alone_a_run_another_job_finished_since_submit(
    tmp_path, prepared_data, per_device
):
    runs = [tiny_run(prepared_data, grid=GRID, seed=s) for s in range(2)]
    ids = [r.run_id for r in runs]
    write_manifest(tmp_path, GRID, runs)
    seen = {r: row_mark(tmp_path, GRID, r) for r in ids}  # submit: no rows
    _finished_elsewhere(tmp_path, runs[0], "41_3")  # a task of an earlier submit, meanwhile
    task = RunTask(spec_for(tmp_path, GRID, prepared_data, threads=1), ids, per_device, seen)

    if per_device == 1:
        statuses = task._in_order(_NoSignal(), "77_0")
    else:
        statuses = task._packed(_NoSignal(), "77_0")

    assert statuses == {ids[1]: "completed"}
    rows = newest_values(tmp_path, GRID, ["job_id", "attempt"])
    assert rows == {ids[0]: ("41_3", 1), ids[1]: ("77_0", 1)}  # trained once, each


def test_a_restarted_task_skips_what_it_finished_and_resumes_what_it_recorded_cancelled(
    tmp_path, prepared_data
):
    runs = [tiny_run(prepared_data, grid=GRID, seed=s) for s in range(3)]
    ids = [r.run_id for r in runs]
    write_manifest(tmp_path, GRID, runs)
    seen = {r: row_mark(tmp_path, GRID, r) for r in ids}
    _finished_elsewhere(tmp_path, runs[0], "77_0")  # this job, before its requeue
    cancelled = RunResult(status=Status.CANCELLED, error="a requeue that looked like scancel")
    write_result(tmp_path, runs[1], cancelled, provenance("77_0"))
    task = RunTask(spec_for(tmp_path, GRID, prepared_data, threads=1), ids, 1, seen)

    statuses = task._in_order(_NoSignal(), "77_0")

    assert statuses == {ids[0]: "completed", ids[1]: "completed", ids[2]: "completed"}
    rows = newest_values(tmp_path, GRID, ["job_id", "attempt"])
    assert rows == {ids[0]: ("77_0", 1), ids[1]: ("77_0", 2), ids[2]: ("77_0", 1)}


def test_a_task_start_up_reads_only_its_own_runs_rows(tmp_path, prepared_data):
    runs = [tiny_run(prepared_data, grid=GRID, seed=s) for s in range(6)]
    ids = [r.run_id for r in runs]
    write_manifest(tmp_path, GRID, runs)
    for run in runs:
        _finished_elsewhere(tmp_path, run, "5_0" if run is runs[0] else "9_1")
    others = [newest_row_file(tmp_path, GRID, r) for r in ids[2:]]
    for path in others:  # unreadable: a reader that opens them fails, or moves them aside
        path.write_bytes(b"PAR1 not a row of this task's")

    assert done_by_job(tmp_path, GRID, ids[:2], "5_0") == {ids[0]: "completed"}
    assert all(p.read_bytes() == b"PAR1 not a row of this task's" for p in others)
