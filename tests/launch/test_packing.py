"""Packing several runs onto one device: each run in its own process, interruptible, resumable.
The runs are quadratic ones whose steps sleep (a user's optimizer file): the processes, signals
and files are real, the model does not matter."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
from pathlib import Path

import pytest

from harness.core import paths
from harness.core.config import RunConfig
from harness.grid.resolve import Resolver
from harness.launch.worker.job import done_by_job, write_status
from harness.launch.worker.packing import PackInterrupted, run_packed
from harness.store.db import newest_values
from harness.store.manifest import write_manifest
from tests.local_submits import SLOW_SGD
from tests.runs import spec_for, tiny_run

GRID = "packed"


def _slow_runs(folder: Path, steps: int, seeds: int) -> list[RunConfig]:
    """Quadratic runs of ``steps`` steps of 0.05 s of sleep each (``slow_sgd.py`` in ``folder``)."""
    (folder / "slow_sgd.py").write_text(SLOW_SGD.format(step_s=0.05))
    base = {"workload": "quadratic", "optimizer": f"{folder / 'slow_sgd.py'}:SlowSGD"}
    point = {**base, "lr": 0.01, "steps": steps, "log_every": 2}
    resolver = Resolver(GRID, "local", lambda d: None, "test")
    return [resolver.resolve({**point, "seed": s}, "test run") for s in range(seeds)]


def _stepped(root, run_ids) -> bool:
    """Each run has logged a training point (a run stopped before its first step is not
    checkpointed: it starts again)."""
    live = [paths.live_path(root, GRID, r) for r in run_ids]
    return all(p.exists() and '"train_loss"' in p.read_text() for p in live)


@pytest.mark.slow
def test_packed_runs_stop_together_resume_and_each_write_a_row(tmp_path, prepared_data):
    runs = _slow_runs(tmp_path, 100, 3)
    ids = [r.run_id for r in runs]
    write_manifest(tmp_path, GRID, runs)
    spec = spec_for(tmp_path, GRID, prepared_data, threads=1)

    # A stop request reaches both running processes once they step: each checkpoints, none
    # writes a row.
    with pytest.raises(PackInterrupted) as stopped:
        run_packed(
            spec, ids, per_device=2, job_id="j1", should_stop=lambda: _stepped(tmp_path, ids[:2])
        )
    assert stopped.value.interrupted == tuple(ids[:2]) and stopped.value.statuses == {}
    started = [paths.checkpoint_path(tmp_path, GRID, r).exists() for r in ids]
    assert started == [True, True, False]  # the third never started
    assert newest_values(tmp_path, GRID, ["status"]) == {}

    statuses = run_packed(spec, ids, per_device=2, job_id="j1")

    assert statuses == dict.fromkeys(ids, "completed")
    rows = newest_values(tmp_path, GRID, ["status", "job_id", "steps_done"])
    assert rows == {r.run_id: ("completed", "j1", r.data.steps) for r in runs}
    assert not any(paths.checkpoint_path(tmp_path, GRID, r).exists() for r in ids)
    # A requeued task skips what it finished (rows carrying its job id) without starting them.
    assert run_packed(spec, ids, per_device=2, job_id="j1", should_stop=lambda: True) == statuses


@pytest.mark.slow
def test_run_processes_leave_slurm_signals_to_the_parent(tmp_path, prepared_data):
    # SLURM signals every process of a job step (USR2 before the time limit, SIGTERM on scancel
    # or requeue). A run process must neither die of them (its run would be recorded as failed)
    # nor stop on its own: the parent decides, through the stop event.
    runs = _slow_runs(tmp_path, 60, 2)
    write_manifest(tmp_path, GRID, runs)
    signalled: list[int] = []

    def signal_every_child() -> bool:  # polled every 0.2 s: during start-up and training
        for child in mp.active_children():
            for signum in (signal.SIGTERM, signal.SIGUSR2, signal.SIGINT):
                os.kill(child.pid, signum)
            signalled.append(child.pid)
        return False

    ids = [r.run_id for r in runs]
    spec = spec_for(tmp_path, GRID, prepared_data, threads=1)
    statuses = run_packed(spec, ids, per_device=2, should_stop=signal_every_child)

    assert len(set(signalled)) == 2 and len(signalled) > 10
    assert statuses == dict.fromkeys(ids, "completed")
    assert newest_values(tmp_path, GRID, ["status"]) == {r: ("completed",) for r in ids}


@pytest.mark.slow
def test_a_killed_run_process_is_recorded_as_failed_and_its_neighbour_completes(
    tmp_path, prepared_data
):
    runs = _slow_runs(tmp_path, 60, 2)
    write_manifest(tmp_path, GRID, runs)
    ids = [r.run_id for r in runs]
    victim = f"run-{ids[0]}"

    def kill_first_run() -> bool:
        for child in mp.active_children():
            if child.name == victim:
                os.kill(child.pid, signal.SIGKILL)
        return False

    spec = spec_for(tmp_path, GRID, prepared_data, threads=1)
    statuses = run_packed(spec, ids, per_device=2, should_stop=kill_first_run)

    assert statuses == {ids[0]: "failed", ids[1]: "completed"}
    (error,) = newest_values(tmp_path, GRID, ["error"])[ids[0]]
    assert "run process died by SIGKILL" in error


def test_a_restarted_task_skips_its_finished_runs_but_not_cancelled_ones(tmp_path, prepared_data):
    runs = [tiny_run(prepared_data, grid=GRID, seed=s) for s in range(4)]
    write_manifest(tmp_path, GRID, runs)
    ids = [r.run_id for r in runs]
    written = [("completed", "j1"), ("cancelled", "j1"), ("failed", "j0")]  # the 4th has no row
    for run_id, (status, job) in zip(ids, written, strict=False):
        write_status(tmp_path, GRID, run_id, status, "", job)

    assert done_by_job(tmp_path, GRID, ids, "j1") == {ids[0]: "completed"}
    assert done_by_job(tmp_path, GRID, ids, "j0") == {ids[2]: "failed"}
    assert done_by_job(tmp_path, GRID, ids, None) == {}
