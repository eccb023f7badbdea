"""The one run pool behaves alike under both backends (issue 20, item 1): the same three runs (one
completes, one is killed by SIGKILL as the OOM killer would, one's result is refused by the
results folder and spilled) through the local launcher and through one packed SLURM task on the
test cluster end the same way."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from harness.core import paths
from harness.launch.contract import ExecutionSpec
from harness.launch.local.launcher import LocalLauncher
from harness.launch.profile import load_profile
from harness.launch.slurm.launcher import SlurmLauncher
from harness.store.manifest import write_manifest
from tests.polling import wait_until
from tests.runs import tiny_run
from tests.slurm_runs import rows, write_profile

pytestmark = pytest.mark.slurm

LENGTHS = {"completes": 6, "killed": 4000, "spills": 80}
"""Steps of each run: the killed one would outlast the test; the spilled one ends last."""


def _holder(lock: Path) -> int | None:
    """The process holding ``lock`` open (a run process holds its run lock), if any."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == str(lock):
                    return int(pid)
            except OSError:
                continue
    return None


def _setup(root: Path, grid: str, data: Path) -> dict[str, Any]:
    """The three runs in the manifest; the spilling one's curve path made unwritable."""
    runs = {
        k: tiny_run(data, grid=grid, tokens=8 * 32 * n, log_every=2, seed=7)
        for k, n in LENGTHS.items()
    }
    write_manifest(root, grid, list(runs.values()))
    # a folder where its first curve goes: the write fails (the disk refuses, as it were)
    paths.curve_path(root, grid, runs["spills"].run_id, "000001").mkdir(parents=True)
    return runs


def _kill_when_training(root: Path, grid: str, run_id: str) -> None:
    """SIGKILL the run's process once it has logged a step (its progress file exists)."""
    wait_until(lambda: paths.progress_path(root, grid, run_id).exists(), 300, "killed run trains")
    lock = (paths.run_lock_path(root, grid, run_id)).resolve()
    pid = wait_until(lambda: _holder(lock), 30, "the run process")
    os.kill(pid, signal.SIGKILL)


def _outcomes(root: Path, grid: str, runs: dict[str, Any], spill: Path) -> dict[str, Any]:
    """What each run came to: its row's status and whether steps were kept, and its spill."""
    got = rows(root, grid)
    out = {}
    for what, run in runs.items():
        row = got.get(run.run_id)
        spilled = sorted(p.name for p in spill.rglob(f"{run.run_id}.json"))
        out[what] = (row and row["status"], row and row["steps_done"] > 0, spilled != [])
    return out


EXPECTED = {
    "completes": ("completed", True, False),
    "killed": ("failed", True, False),
    "spills": (None, None, True),
}


def test_three_runs_end_alike_locally_and_in_a_packed_slurm_task(
    slurm_env: Path, prepared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    spill_local, spill_slurm = slurm_env / "spill-local", slurm_env / "spill-slurm"
    # Locally: three runs at once, each in its own process.
    root = slurm_env / "local"
    runs = _setup(root, "par", prepared_data)
    monkeypatch.setenv("HARNESS_SPILL", str(spill_local))
    local = LocalLauncher(load_profile("local"), gpus=[])
    spec = ExecutionSpec.build(local.profile, root, "par", prepared_data)
    killer = threading.Thread(target=_kill_when_training, args=(root, "par", runs["killed"].run_id))
    killer.start()
    with pytest.raises(Exception, match="kept in"):  # the spill: submit exits 2 with its line
        local.wait(local.launch(list(runs.values()), spec), spec, show_progress=False)
    killer.join()
    on_local = _outcomes(root, "par", runs, spill_local)

    # On SLURM: one task packing the three runs, three at once on its device.
    root = slurm_env / "slurm"
    runs = _setup(root, "par", prepared_data)
    monkeypatch.setenv("HARNESS_SPILL", str(spill_slurm))
    name = write_profile(slurm_env / "launchers", "packed3", runs_per_task=3, runs_per_device=3)
    slurm = SlurmLauncher(load_profile(name))
    spec = ExecutionSpec.build(slurm.profile, root, "par", prepared_data)
    slurm.launch(list(runs.values()), spec)
    _kill_when_training(root, "par", runs["killed"].run_id)
    done = lambda: len(rows(root, "par")) == 2 and any(spill_slurm.rglob("*.json"))  # noqa: E731
    wait_until(done, 400, "two rows and a spill")
    on_slurm = _outcomes(root, "par", runs, spill_slurm)

    assert on_local == on_slurm == EXPECTED, (on_local, on_slurm)
