"""The in-process backend (``kind: inprocess``, :mod:`harness.launch.inprocess`): the same rows
as the local launcher's run processes, and nothing of a run left in the caller's state."""

from __future__ import annotations

import io
import os
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch
from threadpoolctl import threadpool_info, threadpool_limits

from harness.core import paths
from harness.launch.submit import submit
from tests.slurm_runs import curve_losses, rows
from tests.threads import torch_threads

GRID = """
name: par
base: {workload: quadratic, optimizer: adamw, steps: 8, log_every: 2}
grid: {lr: [1.0e-3, 3.0e-3]}
seeds: 2
"""

PROCESS_AND_TIME = {
    "created_at",
    "peak_mem_gb",  # the peak memory of the process it trained in (in process: the caller's)
    "wall_s",
    "tokens_per_s",
    "mfu",
    "compile_s",
    "data_wait_s",
    "optimizer_step_frac",
}
"""Row columns that record the process a run trained in and how fast: they differ between any
two attempts of a run, whatever the launcher."""


def _submit(tmp_path: Path, launcher: str) -> dict[str, dict[str, Any]]:
    grid = tmp_path / "par.yaml"
    grid.write_text(GRID)
    root = tmp_path / launcher
    data = tmp_path / "data"
    report = submit(grid, root=root, data_root=data, launcher=launcher, out=io.StringIO())
    assert set(report.statuses.values()) == {"completed"} and len(report.statuses) == 4
    return rows(root, "par")


def test_the_same_grid_gives_the_same_rows_in_process_as_in_run_processes(tmp_path):
    local, inproc = _submit(tmp_path, "local"), _submit(tmp_path, "inprocess")
    assert set(local) == set(inproc)
    for run_id, row in local.items():
        assert set(row) == set(inproc[run_id])
        differing = {k for k, v in row.items() if inproc[run_id][k] != v}
        assert differing <= PROCESS_AND_TIME, (run_id, differing)
        assert row["torch_threads"] == inproc[run_id]["torch_threads"]
        assert curve_losses(tmp_path / "local", "par", run_id) == curve_losses(
            tmp_path / "inprocess", "par", run_id
        )
        log = paths.submissions_dir(tmp_path / "inprocess", "par") / "inprocess" / f"{run_id}.log"
        assert "step 8/8" in log.read_text()


def _state() -> dict[str, Any]:
    blas = {lib["filepath"]: lib["num_threads"] for lib in threadpool_info()}
    return {
        "random": random.getstate(),
        "numpy": np.random.get_state()[1].tolist(),
        "torch": torch.get_rng_state().tolist(),
        "threads": torch.get_num_threads(),
        "blas": blas,
        "cwd": os.getcwd(),
        "env": dict(os.environ),
    }


def test_a_run_in_process_leaves_the_callers_state_as_it_was(tmp_path, monkeypatch):
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)  # a run sets them for itself
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    resets: list[int] = []
    monkeypatch.setattr(torch._dynamo, "reset", lambda: resets.append(1))
    (tmp_path / "par.yaml").write_text(GRID.replace("steps: 8", "steps: 2"))
    with torch_threads(3), threadpool_limits(limits=2, user_api="blas"):  # not a run's counts
        random.seed(5), np.random.seed(5), torch.manual_seed(5)
        before = _state()
        report = submit(
            tmp_path / "par.yaml",
            root=tmp_path / "r",
            data_root=tmp_path / "d",
            launcher="inprocess",
            out=io.StringIO(),
        )
        after = _state()
    assert set(report.statuses.values()) == {"completed"}
    assert after == before
    assert len(resets) == 4  # Dynamo's in-memory caches: each run leaves none, as in a run process
