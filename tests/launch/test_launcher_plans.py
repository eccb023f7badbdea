"""Every shipped launcher profile's sbatch plan for a shipped grid is pinned (issue 20, item 4):
refactoring the profiles or the pool changes no sbatch script, no packing and no plan text.

The golden files under ``tests/fixtures/sbatch_plans/`` were written by the code before issue 20's
refactor; ``HARNESS_WRITE_PLANS=1`` rewrites them (only for an intended change)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import submitit.slurm.slurm as submitit_slurm

from harness.grid.load import load_grid
from harness.launch.contract import ExecutionSpec, launcher_for
from harness.launch.local import slots
from harness.launch.profile import load_profile, profile_names
from harness.launch.slurm import arrays
from harness.launch.slurm.limits import ClusterLimits

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "sbatch_plans"
VOCAB = {"classics-gpt2": 50304, "classics-bpe8k": 8192}
GRIDS = ("optimizer_gap", "coupled_adam")
SHIPPED = sorted(p.stem for p in (REPO / "launchers").glob("*.yaml"))
PACKED = Path(__file__).resolve().parents[1] / "fixtures" / "launchers"
"""A packed profile (runs_per_device: 2): the per-device choice is pinned too."""


def _plan(
    profile_name: str, grid: str, tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """What the launcher would hand sbatch (its scripts, through submitit) and each task."""
    runs = load_grid(REPO / "grids" / f"{grid}.yaml", vocab=VOCAB.__getitem__).runs
    profile = load_profile(profile_name)
    runner: Any = launcher_for(profile)
    if not runner.detaches:
        return {"plan": runner.plan(runs)}
    runner._limits = ClusterLimits(max_array_size=1001, max_job_count=10000, source="pinned")
    shapes: dict[str, Any] = {}

    def make_executor(prof: Any, folder: Path, processes: int, grid_name: str) -> int:
        params = arrays.executor_parameters(prof, processes, grid_name)
        script = submitit_slurm._make_sbatch_string(command="CMD", folder="/F", **params)
        shapes[str(processes)] = {
            "sbatch": script,
            "max_num_timeout": prof.settings.max_num_timeout,
            "request": repr(arrays.request(prof, processes)),
            "tasks": [],
        }
        return processes

    def submit_array(processes: int, tasks: list[Any]) -> tuple[str, bool]:
        shapes[str(processes)]["tasks"] += [[list(t.run_ids), t.per_device] for t in tasks]
        return str(1000 + len(shapes[str(processes)]["tasks"])), True

    monkeypatch.setattr(arrays, "make_executor", make_executor)
    monkeypatch.setattr(arrays, "submit_array", submit_array)
    spec = ExecutionSpec.build(profile, tmp, grid, tmp)
    tasks = arrays.group_into_tasks(runs, profile.settings.runs_per_task)
    runner.submit_tasks(tasks, spec, runner._limits)
    return {"plan": runner.plan(runs), "shapes": shapes}


@pytest.mark.parametrize("grid", GRIDS)
@pytest.mark.parametrize("profile_name", [*SHIPPED, "packed"])
def test_shipped_profiles_plan_as_before(
    profile_name: str, grid: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("HARNESS_LAUNCHERS", str(PACKED))  # shipped names are not in it
    monkeypatch.setattr(slots, "available_cores", lambda: 8)  # the local plan splits 8 cores
    assert profile_name in profile_names()
    got = _plan(profile_name, grid, tmp_path, monkeypatch)
    path = GOLDEN / f"{profile_name}--{grid}.json"
    if os.environ.get("HARNESS_WRITE_PLANS") == "1":
        path.write_text(json.dumps(got, sort_keys=True) + "\n")
    assert got == json.loads(path.read_text())
