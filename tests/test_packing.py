"""Packing several runs onto one device: each run in its own process, interruptible, resumable."""

from __future__ import annotations

import pytest

from harness import paths
from harness.db import newest_values
from harness.launch.packing import run_packed
from harness.manifest import write_manifest
from harness.train import TrainingInterrupted
from tests.runs import tiny_run

GRID = "packed"


def test_packed_runs_stop_together_resume_and_each_write_a_row(tmp_path, prepared_data):
    runs = [tiny_run(prepared_data, grid=GRID, seed=s) for s in range(3)]
    ids = [r.run_id for r in runs]
    write_manifest(tmp_path, GRID, runs)
    args = (str(tmp_path), GRID, ids, str(prepared_data))

    # A stop request reaches both running processes: each checkpoints, none writes a row.
    with pytest.raises(TrainingInterrupted):
        run_packed(*args, per_device=2, threads=1, job_id="j1", should_stop=lambda: True)
    started = [paths.checkpoint_path(tmp_path, GRID, r).exists() for r in ids]
    assert started == [True, True, False]  # the third never started
    assert newest_values(tmp_path, GRID, ["status"]) == {}

    statuses = run_packed(*args, per_device=2, threads=1, job_id="j1")

    assert statuses == dict.fromkeys(ids, "completed")
    rows = newest_values(tmp_path, GRID, ["status", "job_id", "steps_done"])
    assert rows == {r.run_id: ("completed", "j1", r.steps) for r in runs}
    assert not any(paths.checkpoint_path(tmp_path, GRID, r).exists() for r in ids)
    # A requeued task skips what it finished (rows carrying its job id) without starting them.
    assert run_packed(*args, per_device=2, job_id="j1", should_stop=lambda: True) == statuses
