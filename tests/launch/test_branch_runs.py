"""Branch runs executed (issue 42): a budget grid under wsd trained with branching and without
gives the same rows and curves, at a fraction of the steps; a branch interrupted in its cooldown
resumes without training anything twice; a branch whose parent cannot give it its state trains
alone, and says so."""

from __future__ import annotations

import io
import signal
import textwrap
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from harness.core import paths
from harness.grid.load import load_grid
from harness.launch.branching import read_plan
from harness.launch.submit import submit
from harness.store.rows import newest_curve_file
from tests.local_submits import alive, descendants, logged_steps, start_submit
from tests.polling import wait_until
from tests.slurm_runs import rows

GRID = """
name: {name}
base: {{workload: quadratic, optimizer: adamw, lr: 0.05, schedule: wsd, warmup_steps: 2,
        log_every: 3, eval_every: 6}}
grid: {{steps: [{a}, {a2}, {a4}]}}
seeds: 1
{extra}
"""

TIMING = {
    "wall_s", "tokens_per_s", "mfu", "peak_mem_gb", "compile_s", "data_wait_s",
    "optimizer_step_frac", "created_at", "hostname", "job_id", "git_commit", "visible_devices",
    "grid",
}  # fmt: skip
"""Columns that differ between two trainings of one run (time, place) or two grids (name)."""

BRANCH_COLUMNS = {"branch_of", "steps_trained"}


def _grid(folder: Path, name: str, a: int = 10, extra: str = "") -> Path:
    path = folder / f"{name}.yaml"
    text = GRID.format(name=name, a=a, a2=2 * a, a4=4 * a, extra=extra)
    path.write_text(textwrap.dedent(text))
    return path


def _submit(grid: Path, root: Path, data: Path) -> str:
    out = io.StringIO()
    submit(grid, root=root, data_root=data, launcher="local", out=out)
    return out.getvalue()


def _curve(root: Path, grid: str, run_id: str) -> list[dict[str, Any]]:
    path = newest_curve_file(root, grid, run_id)
    assert path is not None
    points = pq.read_table(path).to_pylist()
    return [{k: v for k, v in p.items() if k not in ("elapsed_s", "grid")} for p in points]


def _same(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in TIMING | BRANCH_COLUMNS}


@pytest.mark.slow
def test_a_budget_grid_trained_with_branches_gives_the_rows_and_curves_of_one_without(tmp_path):
    root, data = tmp_path / "results", tmp_path / "data"
    _submit(_grid(tmp_path, "alone", extra="branch: off"), root, data)
    _submit(_grid(tmp_path, "branched"), root, data)
    alone, branched = rows(root, "alone"), rows(root, "branched")
    assert set(alone) == set(branched) and len(alone) == 3  # the same run_ids
    plan = read_plan(root, "branched")
    assert len(plan.branches) == 2
    for run_id, row in branched.items():
        assert row["status"] == "completed"
        assert _same(row) == _same(alone[run_id])
        assert _curve(root, "branched", run_id) == _curve(root, "alone", run_id)
        branch = plan.parent_of(run_id)
        assert row["branch_of"] == (branch.parent if branch else None)
        assert row["steps_trained"] == row["steps_done"] - (branch.step if branch else 0)
        assert alone[run_id]["branch_of"] is None
        assert alone[run_id]["steps_trained"] == alone[run_id]["steps_done"]
    trained = sum(r["steps_trained"] for r in branched.values())
    assert trained / sum(r["steps_done"] for r in branched.values()) <= 0.75
    # the branch points are gone once their branches have rows
    assert not list(paths.grid_dir(root, "branched").rglob("*.branch.pt"))


SLOW_SGD = '''
import time

import torch


class SlowSGD(torch.optim.SGD):
    """SGD that sleeps at each step: a submit can be killed while a branch trains."""

    def step(self, closure=None):
        time.sleep(0.3)
        return super().step(closure)
'''

SLOW_GRID = """
name: kb
base: {optimizer: ./slow_sgd.py:SlowSGD, workload: quadratic, lr: 0.01, schedule: wsd,
       decay_frac: 0.5, log_every: 1}
grid: {steps: [16, 32, 64]}
seeds: 1
local: {base: {}}
"""


@pytest.mark.slow
def test_kill_9_in_a_cooldown_then_a_resubmit_resumes_the_branch_and_trains_nothing_twice(
    tmp_path,
):
    (tmp_path / "slow_sgd.py").write_text(SLOW_SGD)
    grid = tmp_path / "kb.yaml"
    grid.write_text(textwrap.dedent(SLOW_GRID))
    root, data, spill = tmp_path / "results", tmp_path / "data", tmp_path / "spill"
    runs = {r.data.steps: r.run_id for r in load_grid(grid, vocab=lambda d: None).runs}
    branch, parent = runs[32], runs[64]

    first = start_submit(grid, root, data, spill)
    in_cooldown = lambda: any(s > 20 for s in logged_steps(root, "kb", branch))  # noqa: E731
    wait_until(in_cooldown, 240, "the branch in its cooldown")
    procs = descendants(first.pid)
    first.kill()  # kill -9: no handler runs; the orphans checkpoint and stop
    first.communicate(timeout=30)
    assert first.returncode == -signal.SIGKILL  # submit had not ended
    assert wait_until(lambda: not any(alive(p) for p in procs), 60, "orphaned runs to stop")
    assert branch not in rows(root, "kb")
    missing = 3 - len(rows(root, "kb"))
    assert paths.checkpoint_path(root, "kb", branch).exists()  # its own: it resumes from it

    again = start_submit(grid, root, data, spill)
    out, err = again.communicate(timeout=400)
    assert again.returncode == 0, err
    assert f"launching {missing} " in out  # only what is missing
    got = rows(root, "kb")
    assert {r["status"] for r in got.values()} == {"completed"}
    for run_id in runs.values():  # each step logged once over both attempts: trained once
        steps = logged_steps(root, "kb", run_id)
        assert steps == sorted(set(steps)) and steps[-1] == got[run_id]["steps_done"], steps
    steps = logged_steps(root, "kb", branch)
    assert steps[0] == 17  # from its parent's state at step 16: the stable phase not retrained
    assert (got[branch]["branch_of"], got[branch]["steps_trained"]) == (parent, 16)
    assert (got[parent]["branch_of"], got[parent]["steps_trained"]) == (None, 64)


@pytest.mark.slow
def test_a_parent_that_diverges_before_the_branch_points_leaves_its_branches_to_train_alone(
    tmp_path,
):
    path = tmp_path / "dv.yaml"
    path.write_text(
        "name: dv\nbase: {workload: quadratic, optimizer: sgd, lr: 1000.0, schedule: wsd, "
        "log_every: 1}\ngrid: {steps: [10, 20, 40]}\nseeds: 1\n"
    )
    root, data = tmp_path / "results", tmp_path / "data"
    _submit(path, root, data)
    got = rows(root, "dv")
    plan = read_plan(root, "dv")
    assert len(plan.branches) == 2
    parent = got[plan.branches[0].parent]
    assert parent["status"] == "diverged" and parent["steps_done"] < plan.branches[0].step
    for b in plan.branches:  # trained alone: the outcome the run has without branching
        row = got[b.run_id]
        assert (row["status"], row["steps_done"]) == ("diverged", parent["steps_done"])
        assert (row["branch_of"], row["steps_trained"]) == (None, row["steps_done"])
        log = (paths.local_logs_dir(root, "dv") / f"{b.run_id}.log").read_text()
        assert f"trained alone from step 0: its parent {b.parent} ended diverged" in log  # said
